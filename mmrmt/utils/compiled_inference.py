"""The tools' ``--compile [--compile-options KEY=VALUE ...]``: the backbone and neck compiled in place by
torch.compile (Inductor) for inference, weights frozen, options checked before anything is built, the compile
time said once. Why these modules, options and input sizes (measured): docs/benchmark.md, "--compile in the
tools". A config's own ``compile`` setting is mmengine's, for its training step; ``--compile`` leaves it alone.
"""
import argparse
from typing import Any, Dict, Optional, Sequence

from mmengine.config import DictAction
from torch import nn

from mmrmt.engine.inductor_options import inductor_options_problem
from .cfg_options import parse_pairs
from .preflight import PreflightError

#: The inference tools' help of ``--compile``.
COMPILE_HELP = ('torch.compile (Inductor) the backbone and neck for inference, weights frozen (freezing=True); '
                'compiled code is cached in TORCHINDUCTOR_CACHE_DIR for the next run')
#: The Inductor options of ``--compile`` for inference, which the user's ``--compile-options`` update: the
#: weights are folded into the graph when it first runs, after the tools loaded the checkpoint.
INFERENCE_OPTIONS = {'freezing': True}


def format_compile_options(options: Dict[str, Any]) -> str:
    """``options`` as the reports give them: 'freezing=True layout_optimization=False'."""
    return ' '.join(f'{name}={value}' for name, value in options.items())


def add_compile_arguments(parser: argparse.ArgumentParser, compile_help: str = COMPILE_HELP) -> None:
    """``--compile`` (its help ``compile_help``) and ``--compile-options KEY=VALUE ...``."""
    parser.add_argument('--compile', action='store_true', help=compile_help)
    parser.add_argument('--compile-options', nargs='+', default=[], metavar='KEY=VALUE',
                        help="with --compile: Inductor options of torch.compile(options=...), e.g. "
                        "'max_autotune=True' (over freezing=True for inference)")


def check_compile(compile: bool, pairs: Sequence[str], device_type: str,
                  flag: str = '--compile-options') -> Optional[Dict[str, Any]]:
    """The user's Inductor options of ``--compile`` (None without ``--compile``), checked, and that Inductor can
    build its code on ``device_type`` ('cpu': a C++ compiler; 'cuda': Triton).

    Args:
        compile (bool): Whether ``--compile`` was given.
        pairs (Sequence[str]): The options as given (``flag``), e.g. ``['freezing=True']``, read by the tools' one
            reader (:func:`~mmrmt.utils.cfg_options.parse_pairs`), each value as mmengine's ``DictAction`` reads a
            scalar, quotes stripped (Inductor's options are scalars, some text with commas, e.g.
            ``max_autotune_gemm_backends=CPP,ATEN``); nothing is evaluated.
        device_type (str): Where the compiled code runs.
        flag (str): The option that gave ``pairs``, in messages.

    Returns:
        dict | None: Option name (underscores) to value, for ``torch.compile(options=...)``.

    Raises:
        PreflightError: ``flag`` without ``--compile``; a pair without ``=``, an option Inductor does not have or
            a value of another type; no compiler for Inductor's code.
    """
    if not compile:
        if pairs:
            raise PreflightError(f'{flag} set the options of --compile: add --compile')
        return None
    given = parse_pairs(pairs, flag, lambda value, pair: DictAction._parse_int_float_bool(value.strip('\'" ')))
    options = {key.replace('-', '_'): value for key, value in given.items()}
    problem = inductor_options_problem(options)
    if problem is not None:
        raise PreflightError(f'{flag} {problem}')
    if device_type == 'cuda':
        from torch.utils._triton import has_triton
        if not has_triton():
            raise PreflightError('--compile on CUDA: Inductor generates Triton kernels and Triton is not '
                                 'installed (pip install triton), or run without --compile')
        return options
    from torch._inductor import cpp_builder, exc
    try:
        cpp_builder.get_cpp_compiler()
    except exc.InvalidCxxCompiler:
        raise PreflightError('torch.compile on the CPU: Inductor builds C++ and finds no compiler (g++ or the CXX '
                             'of torch._inductor.config.cpp.cxx); install g++, or run without compiling') from None
    return options


def feature_modules(model: nn.Module) -> Dict[str, nn.Module]:
    """The modules ``--compile`` compiles, by name: a detector's or segmentor's ``backbone`` and ``neck``
    (through wrappers that hold the model as ``module``: DDP, a TTA model), else the model itself."""
    while not hasattr(model, 'backbone') and isinstance(getattr(model, 'module', None), nn.Module):
        model = model.module
    found = {name: getattr(model, name) for name in ('backbone', 'neck')
             if isinstance(getattr(model, name, None), nn.Module)}
    return found or {type(model).__name__: model}


class CompileRecord:
    """What torch.compile did in this process since the record was made: dynamo's graphs, Inductor's
    compilations (how many from its on-disk cache), the seconds.

    Args:
        what (str): What was compiled, for :meth:`summary` (e.g. 'backbone and neck').
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.start = self.counts()

    @staticmethod
    def counts() -> Dict[str, float]:
        """torch's running totals: graphs, Inductor's compilations (its cache's hits, misses and bypasses) and of them
        the hits, compile seconds."""
        from torch._dynamo.utils import calculate_time_spent, counters
        inductor = counters['inductor']
        return dict(graphs=counters['stats']['unique_graphs'], cached=inductor['fxgraph_cache_hit'],
                    compilations=sum(inductor[f'fxgraph_cache_{kind}'] for kind in ('hit', 'miss', 'bypass')),
                    seconds=calculate_time_spent()['total_wall_time'])

    def summary(self) -> str:
        """One line, e.g. 'torch.compile: backbone and neck compiled in 41.2 s (3 graphs; Inductor's code
        of 3 of 3 from its cache /tmp/torchinductor_me)'."""
        from torch._inductor.runtime.cache_dir_utils import cache_dir
        done = {key: value - self.start[key] for key, value in self.counts().items()}
        return (f"torch.compile: {self.what} compiled in {done['seconds']:.1f} s ({done['graphs']} graphs; Inductor's "
                f"code of {done['cached']} of {done['compilations']} from its cache {cache_dir()})")


def compile_features(model: nn.Module, options: Dict[str, Any], training: bool = False) -> CompileRecord:
    """Compile ``model``'s :func:`feature_modules` in place (lazily: on their first call).

    Args:
        model (nn.Module): A detector, segmentor (or a wrapper of one) or a bare backbone.
        options (dict): The user's Inductor options (:func:`check_compile`), over :data:`INFERENCE_OPTIONS`
            unless ``training`` (mmengine's way for a training step: no freezing, the weights change).
        training (bool): Compile for training.

    Returns:
        CompileRecord: Say its :meth:`~CompileRecord.summary` once the model has run.
    """
    modules = feature_modules(model)
    for module in modules.values():
        module.compile(options=dict(options) if training else {**INFERENCE_OPTIONS, **options})
    return CompileRecord(' and '.join(modules))
