"""The benchmark's checks of its arguments, in the parent before any worker starts: each bad input is one
line naming the problem and the fix (a worker that died of it would only say that it died)."""
import argparse
from pathlib import Path
from typing import List, Optional, Tuple

import torch

from mmrmt.deployment.runtime import check_runtime, cpu_features, file_inputs, shape_mismatch
from mmrmt.models import backbones
from mmrmt.utils import PreflightError, check_graph_file, check_input_size, read_config
from mmrmt.utils.amp import check_amp
from mmrmt.utils.compiled_inference import check_compile
from mmrmt.utils.model_kind import KIND_NAMES, check_graph_fits_config, graph_model_kind
from .contenders import backbone_type, parse_backbone, takes_impl
from .models import TENSOR_MODE_PROPOSALS
from .upstream_rest import check_upstream_repo


def check_backbone(name: str, impls: List[Optional[str]]) -> None:
    """Fail unless ``name`` is a backbone and arch and each of ``impls`` one of its implementations.

    RMT and ResT have a table of them (their ``impl`` argument checks the
    values); ResT is also compared with the authors' code through ``--upstream-repo``.

    Raises:
        PreflightError: One line naming the problem.
    """
    try:
        backbone, arch = parse_backbone(name)
    except ValueError as error:
        raise PreflightError(str(error)) from error
    archs = getattr(backbones, backbone).arch_zoo
    if arch not in archs:
        raise PreflightError(f'--backbone {name}: {backbone} has no arch {arch!r}; choose one of {sorted(archs)}.')
    check_impls(backbone, impls)


def check_threads(threads: Optional[int]) -> None:
    """Fail unless ``--threads`` is left out (torch's default) or at least 1.

    Raises:
        PreflightError: One line naming the value.
    """
    if threads is not None and threads < 1:
        raise PreflightError(f"--threads must be >= 1, got {threads} (leave it out for torch's default).")


def check_impls(backbone: str, impls: List[Optional[str]]) -> None:
    """Fail unless each of ``impls`` is an implementation of the backbone type ``backbone``.

    Raises:
        PreflightError: One line naming the problem.
    """
    others = [impl for impl in impls if impl not in (None, 'fast')]
    if not takes_impl(backbone) and others:
        raise PreflightError(f'--impl {others[0]}: {backbone} has one implementation, give --impl fast or '
                             'no --impl (--impl compares the forms of RMT and ResT).')


def check_args(args: argparse.Namespace) -> None:
    """Fail on arguments and combinations the benchmark cannot run, before any worker starts.

    Raises:
        PreflightError: One line naming the problem.
    """
    if (args.config is None) == (args.backbone is None):
        raise PreflightError('give either a config file or --backbone TYPE-ARCH, not both or neither.')
    if args.config is not None:
        config = read_config(args.config)  # here, in one line: the workers that build its model would die of it
        check_impls(backbone_type(config), args.impl)
    if args.device == 'cuda' and not torch.cuda.is_available():
        raise PreflightError('--device cuda, but torch sees no CUDA device.')
    if args.device not in ('cpu', 'cuda'):
        raise PreflightError(f"--device must be 'cpu' or 'cuda', got {args.device!r}.")
    if args.device == 'cpu' and not Path('/proc/self/clear_refs').exists():
        raise PreflightError('CPU peak memory is read from /proc/self (Linux only).')
    if len(set(args.impl)) != len(args.impl):
        raise PreflightError(f'--impl lists an implementation twice: {args.impl}.')
    if len(set(args.amp)) != len(args.amp):
        raise PreflightError(f'--amp lists a precision twice: {args.amp}.')
    if 'bf32' in args.amp:
        check_amp('bf32', args.device, args.compile)
    if args.backbone is not None:
        check_backbone(args.backbone, args.impl)
    if args.repeats < 1 or args.warmup < 0 or args.batch < 1:
        raise PreflightError('--repeats and --batch must be >= 1 and --warmup >= 0.')
    check_threads(args.threads)
    check_input_size(*args.shape, 'time')
    if args.compile and args.onnx is not None:
        raise PreflightError('--compile adds compiled rows of the torch model, whose rows time tensor mode beside '
                             '--onnx files: leave out --compile or --onnx')
    args.inductor_options = check_compile(args.compile, args.compile_options, args.device)
    if args.onnx is not None:
        check_onnx_args(args)
    elif args.runtime != ['onnxruntime'] or args.precision != ['f32']:
        raise PreflightError('--runtime and --precision choose how --onnx files run: add --onnx FILE.')
    if args.upstream_repo is not None:
        if not (args.backbone or '').lower().startswith('rest-') or args.onnx:
            raise PreflightError('--upstream-repo compares ResT backbones: give --backbone rest-ARCH '
                                 '(e.g. rest-lite), no config, no --onnx.')
        try:
            check_upstream_repo(args.upstream_repo)
        except FileNotFoundError as error:
            raise PreflightError(str(error)) from error


def check_onnx_args(args: argparse.Namespace) -> None:
    """Fail unless the --onnx files can be timed as given: inference on the CPU, runtimes that run each
    --precision, f32 among them (every row is compared with float32), files that exist, each the graph
    of the kind of model timed beside it (:func:`check_graphs_fit`).

    Raises:
        PreflightError: One line naming the problem and the fix.
    """
    if args.mode != ['infer'] or args.device != 'cpu' or args.amp != ['none']:
        raise PreflightError('--onnx times inference on the CPU: give --mode infer, no --device cuda, no '
                             '--amp (--precision f32 bf16 compares precisions).')
    if 'f32' not in args.precision and 'openvino' in args.runtime:  # onnxruntime alone: check_runtime's line
        raise PreflightError(f'--precision {" ".join(args.precision)} without f32: the table compares every row '
                             'with float32 (speed-up, memory, error); give --precision f32 '
                             f'{" ".join(args.precision)}')
    check_runtimes(args)
    for path in args.onnx:
        check_graph_file(path, '--onnx file')
    check_graphs_fit(args)


def backbone_graphs(args: argparse.Namespace) -> bool:
    """Whether the --onnx files beside a config are its backbone's (``pytorch2onnx.py --backbone-only``):
    the torch rows then time the config's backbone, whose weights are those the export holds."""
    return bool(args.config and args.onnx) and all(graph_model_kind(path) == 'backbone' for path in args.onnx)


def check_graphs_fit(args: argparse.Namespace) -> None:
    """Fail if an --onnx file is the graph of another kind of model than the one timed beside it: with a
    config, its kind (the check of tools/deployment/test_onnx.py), or its backbone for every file; with
    --backbone, a backbone. Its time and outputs would be reported as the model's.

    Raises:
        PreflightError: One line naming both kinds and the fix.
    """
    if args.config is None:
        for path in args.onnx:
            graph = graph_model_kind(path)
            if graph not in (None, 'backbone'):
                raise PreflightError(f'{path} is the graph of a {KIND_NAMES[graph]}, but --backbone {args.backbone} '
                                     'times a backbone: give the config the graph was exported from, or export the '
                                     'backbone with tools/deployment/pytorch2onnx.py --backbone-only')
        return
    if backbone_graphs(args):
        return
    cfg = read_config(args.config)
    for path in args.onnx:
        check_graph_fits_config(path, cfg, args.config)


def check_runtimes(args: argparse.Namespace) -> None:
    """Fail unless every --runtime is installed and runs every --precision (bf16 in OpenVINO,
    onnxruntime's rows f32 only), and torch's bf16 autocast has native bf16.

    Raises:
        PreflightError: One line naming the problem and the fix.
    """
    for precision in args.precision:
        for runtime in args.runtime:
            if not (runtime == 'onnxruntime' and precision == 'bf16' and 'openvino' in args.runtime):
                check_runtime(runtime, precision)
    features = cpu_features()
    if 'bf16' in args.precision and not features.bf16:
        raise PreflightError(f"--precision bf16: this CPU ({features.model}) has no AVX-512 BF16 or AMX, where "
                             "torch's bf16 autocast is emulated; use --precision f32")


def check_onnx_inputs(args: argparse.Namespace) -> None:
    """Fail with one line if an --onnx file does not take the benchmark's inputs.

    Raises:
        PreflightError: Naming the file and what it takes.
    """
    for path in args.onnx or ():
        mismatch = onnx_input_mismatch(path, args.batch, tuple(args.shape))
        if mismatch:
            raise PreflightError(f'--onnx {path} does not take --batch {args.batch} --shape {args.shape[0]} '
                                 f'{args.shape[1]}: {mismatch}; export it at this batch and shape '
                                 '(pytorch2onnx.py --batch N --shape H W) or with --dynamic')


def onnx_input_mismatch(path: str, batch: int, shape: Tuple[int, int]) -> Optional[str]:
    """What keeps the file from taking the benchmark's inputs (None if nothing).

    Two inputs mean a two-stage detector: the images, then the proposals.
    """
    declared = file_inputs(path)
    given = [(batch, 3, *shape)] + [(TENSOR_MODE_PROPOSALS, 4)] * (len(declared) == 2)
    return shape_mismatch(declared, given)
