"""The tools' ``--compile``: a model's feature extractor compiled by torch.compile (Inductor), its options
checked before anything is built, Inductor's on-disk caches reused, the compile time said once.

``tools/test.py``, ``demo/image_demo.py`` and ``tools/analysis_tools/benchmark.py`` take ``--compile``
(and ``--compile-options KEY=VALUE ...``, Inductor options as ``compile_report.py --options`` takes them).

What is compiled: the backbone and, where the model has one, the neck (FPN), each in place
(``nn.Module.compile``: the weights keep their names, a checkpoint loads into them as before); a bare
backbone is compiled whole. Not the whole ``predict``: dynamo splits the tiny test Mask R-CNN's predict
(tests/data/configs) into 45 graphs at 44 breaks (``nonzero`` and ``.item()`` of the RPN's and the
heads' post-processing, mmcv's NMS and RoIAlign, which dynamo cannot trace), while its backbone and neck
are one graph without a break (``torch._dynamo.explain``, torch 2.14.1); the post-processing is not where
the time goes, the backbone is.

Inference (:data:`INFERENCE_OPTIONS`): ``freezing=True``, Inductor folds the weights into the graph as
constants and prepacks them for oneDNN (the weights must not change after the first call: they are read
then, after the tools have loaded the checkpoint). A config's own ``compile`` setting is mmengine's, for
its training step; ``--compile`` leaves it alone.

Caches: Inductor's FX graph cache (``torch._inductor.config.fx_graph_cache``, on by default in torch
2.14) keeps each graph's generated and built code under ``TORCHINDUCTOR_CACHE_DIR`` (by default
``/tmp/torchinductor_$USER``), keyed by the graph, its input shapes, the options and torch's settings
(deterministic algorithms among them: tools/test.py under a config's ``randomness=dict(deterministic=True)``
keys apart from the demo), frozen weights by their shape only: a second run of a tool on the same model and
input sizes, with any checkpoint, loads the code instead of generating and building it again; dynamo still
traces the model (a few seconds).
AOTAutograd's cache, which would also skip that tracing, does not take frozen graphs.

Input sizes: torch's default ``automatic_dynamic_shapes``. The first input size compiles graphs of fixed
sizes; an input that changes a size (batch, height or width) recompiles them once with that size
symbolic, and so on for the next size that changes: at most three recompiles, within
``torch._dynamo.config.recompile_limit`` (8; past it a graph runs eagerly, with torch's warning).
Measured on the tiny Mask R-CNN: 2x3x64x64 compiled 2 graphs, 2x3x64x96 recompiled them with the width
symbolic (4 graphs), both within 1.0e-6 of eager's features. tools/test.py's images are resized and
padded per batch and the demo's are any size: fixed-size graphs (``dynamic=False``) would recompile for
each new size and run eagerly after the limit; all-symbolic ones (``dynamic=True``) would give up the
fixed sizes' code where every input has one size (the benchmark, a test set of one size).
"""
import argparse
from typing import Any, Dict, List, Optional, Sequence

from mmengine.config import DictAction
from torch import nn

from mmrmt.engine.inductor_options import inductor_option_problem
from .preflight import PreflightError

#: The inference tools' help of ``--compile``.
COMPILE_HELP = ('torch.compile (Inductor) the backbone and neck for inference, weights frozen (freezing=True); '
                'compiled code is cached in TORCHINDUCTOR_CACHE_DIR for the next run')
#: The Inductor options of ``--compile`` for inference, which the user's ``--compile-options`` update.
INFERENCE_OPTIONS = {'freezing': True}


def parse_compile_options(pairs: Sequence[str], flag: str = '--options') -> Dict[str, Any]:
    """The Inductor options that ``KEY=VALUE`` ``pairs`` name, checked.

    Args:
        pairs (Sequence[str]): The options as given, e.g. ``['freezing=True']`` (values read as mmengine's
            ``DictAction`` reads a scalar; nothing is evaluated).
        flag (str): The option that gave them, in messages (``--compile-options`` in the tools' ``--compile``).

    Returns:
        dict: Option name (underscores) to value, for ``torch.compile(options=...)``.

    Raises:
        PreflightError: A pair without ``=``, an option Inductor does not have, or a value of another type.
    """
    options = {}
    for pair in pairs:
        key, equals, text = pair.partition('=')
        name = key.strip().replace('-', '_')
        if not equals or not name:
            raise PreflightError(f'{flag} {pair}: give KEY=VALUE, e.g. freezing=True')
        value = DictAction._parse_int_float_bool(text.strip().strip('\'"'))
        problem = inductor_option_problem(name, value)
        if problem is not None:
            raise PreflightError(f'{flag} {pair}: {problem}')
        options[name] = value
    return options


def format_compile_options(options: Dict[str, Any]) -> str:
    """``options`` as the report's header gives them: 'freezing=True layout_optimization=False'."""
    return ' '.join(f'{name}={value}' for name, value in options.items())


def add_compile_arguments(parser: argparse.ArgumentParser, compile_help: str = COMPILE_HELP) -> None:
    """``--compile`` (its help ``compile_help``) and ``--compile-options KEY=VALUE ...`` (see this module)."""
    parser.add_argument('--compile', action='store_true', help=compile_help)
    parser.add_argument('--compile-options', nargs='+', default=[], metavar='KEY=VALUE',
                        help="with --compile: Inductor options of torch.compile(options=...), e.g. "
                        "'max_autotune=True' (over freezing=True for inference)")


def check_compile(compile: bool, pairs: List[str], device_type: str) -> Optional[Dict[str, Any]]:
    """The user's Inductor options of ``--compile`` (None without ``--compile``), checked.

    Args:
        compile (bool): ``--compile``.
        pairs (list[str]): ``--compile-options`` as given, e.g. ``['max_autotune=True']``.
        device_type (str): 'cpu' or 'cuda', where the model will run.

    Returns:
        dict, optional: Option name to value, for :func:`compile_features`.

    Raises:
        PreflightError: ``--compile-options`` without ``--compile``, an option Inductor does not have (naming
            the nearest) or of another type, or no compiler for Inductor's code on ``device_type``.
    """
    if not compile:
        if pairs:
            raise PreflightError('--compile-options set the options of --compile: add --compile')
        return None
    options = parse_compile_options(pairs, flag='--compile-options')
    check_inductor_backend(device_type)
    return options


def check_inductor_backend(device_type: str) -> None:
    """Fail unless Inductor can build its code on ``device_type``: a C++ compiler for the CPU, Triton
    for CUDA.

    Raises:
        PreflightError: One line naming what is missing and the fix.
    """
    if device_type == 'cuda':
        from torch.utils._triton import has_triton
        if not has_triton():
            raise PreflightError('--compile on CUDA: Inductor generates Triton kernels and Triton is not '
                                 'installed (pip install triton), or run without --compile')
        return
    from torch._inductor import exc
    from torch._inductor.cpp_builder import get_cpp_compiler
    try:
        get_cpp_compiler()
    except exc.InvalidCxxCompiler:
        raise PreflightError('--compile on the CPU: Inductor builds C++ and finds no compiler (g++ or the CXX '
                             'of torch._inductor.config.cpp.cxx); install g++, or run without --compile') from None


def feature_modules(model: nn.Module) -> Dict[str, nn.Module]:
    """The modules ``--compile`` compiles, by name: a detector's or segmentor's ``backbone`` and ``neck``
    (through wrappers that hold the model as ``module``: DDP, a TTA model), else the model itself."""
    while not hasattr(model, 'backbone') and isinstance(getattr(model, 'module', None), nn.Module):
        model = model.module
    found = {name: getattr(model, name) for name in ('backbone', 'neck')
             if isinstance(getattr(model, name, None), nn.Module)}
    return found or {type(model).__name__: model}


class CompileRecord:
    """What torch.compile did in this process from this record's creation on: the graphs dynamo
    compiled, how many of Inductor's compilations came from its on-disk cache, the seconds it took.

    Args:
        what (str): What was compiled, for :meth:`summary` (e.g. 'backbone and neck').
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.start = self.counts()

    @staticmethod
    def counts() -> Dict[str, float]:
        """torch's running totals: dynamo's graphs, Inductor's cache hits, misses and bypasses, compile seconds
        (dynamo's frame compiles and AOTAutograd's backward compiles, Inductor's work included)."""
        from torch._dynamo.utils import calculate_time_spent, counters
        inductor = counters['inductor']
        return dict(graphs=counters['stats']['unique_graphs'], hits=inductor['fxgraph_cache_hit'],
                    misses=inductor['fxgraph_cache_miss'], bypasses=inductor['fxgraph_cache_bypass'],
                    seconds=calculate_time_spent()['total_wall_time'])

    def since(self) -> Dict[str, float]:
        """:meth:`counts` since the record was created."""
        now = self.counts()
        return {key: now[key] - self.start[key] for key in now}

    def summary(self) -> str:
        """One line, e.g. 'torch.compile: backbone and neck compiled in 41.2 s (3 graphs; Inductor's code
        of 3 of 3 from its cache /tmp/torchinductor_me)'."""
        from torch._inductor.runtime.cache_dir_utils import cache_dir
        done = self.since()
        compilations = int(done['hits'] + done['misses'] + done['bypasses'])
        return (f'torch.compile: {self.what} compiled in {done["seconds"]:.1f} s ({int(done["graphs"])} graphs; '
                f"Inductor's code of {int(done['hits'])} of {compilations} from its cache {cache_dir()})")


def compile_features(model: nn.Module, options: Dict[str, Any], training: bool = False) -> CompileRecord:
    """Compile ``model``'s :func:`feature_modules` in place; they compile on their first call
    (``torch.compile`` is lazy), so weights loaded before that call are the ones frozen.

    Args:
        model (nn.Module): A detector, segmentor (or a wrapper of one) or a bare backbone.
        options (dict): The user's Inductor options (:func:`check_compile`), over :data:`INFERENCE_OPTIONS`
            unless ``training``.
        training (bool): Compile for training as mmengine compiles a config's training step: ``options``
            alone, no freezing (the weights change at every step).

    Returns:
        CompileRecord: Say its :meth:`~CompileRecord.summary` once the model has run.
    """
    modules = feature_modules(model)
    for module in modules.values():
        module.compile(options=dict(options) if training else {**INFERENCE_OPTIONS, **options})
    return CompileRecord(' and '.join(modules))
