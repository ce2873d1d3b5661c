"""Time and peak memory of a backbone or a config's whole model, per attention implementation.

Each (mode, implementation) pair runs in its own fresh worker process; the
workers of one mode live side by side and take turns, one iteration each,
so that every implementation sees the same machine load. Reported per pair:
the median seconds of the timed iterations (after warm-up), images per
second, and the peak memory the iterations added on top of the built model
and its input — on CPU the growth of the process's peak resident set
(``VmHWM``, reset after the build through ``/proc/self/clear_refs``), on
CUDA ``torch.cuda.max_memory_allocated`` over the allocation after the
build. Ratios compare each implementation with the reference one. ``process
peak MB`` is the worker's peak resident set over its whole life: its
imports, the build (for an exported file, the runtime's graph optimisation,
which folds what depends only on the input size into constants) and the
iterations.

``--impl`` compares RMT's implementations; ResT and ResMLP have one
(``--impl fast`` or none). ResT is compared with the authors' step-by-step
code instead: with ``--upstream-repo PATH`` (a clone of the authors' wofmanaf/ResT) a
further worker runs their ResT (``tools/analysis_tools/upstream_rest.py``)
with the same weights: the parent saves their freshly built model's state
dict, which our backbone loads through its checkpoint loader.

With ``--onnx FILE`` (infer mode, CPU) a further worker times the exported
file in onnxruntime, interleaved with the torch workers, which then run the
same tensor-mode forward on the same inputs (``mmrmt.deployment``: for
two-stage detectors 1000 given proposals instead of the RPN's decoding and
NMS) instead of ``predict``. A file of a dynamic batch (``pytorch2onnx.py
--dynamic``) runs the batch a few images at a time, as many as eager CPU
inference's chunk rule allows for the graph's largest tensor of an image
(``mmrmt.deployment.runtime.image_chunks``; the header says how many), a fixed one
the whole batch at once. ``--runtime onnxruntime openvino`` times each
file in each runtime; ``--precision f32 bf16`` adds torch's bf16 autocast
and OpenVINO's bf16 inference (CPUs with AVX-512 BF16 or AMX only; an int8
file runs int8 at either precision). The table then also gives each
contender's outputs' largest difference, relative to their largest value,
from float32 with the same weights: a torch row's from the first torch
row's, a file's from the first --onnx file's first row (the float32 file
in the first runtime; the torch model and the files hold other weights). The header names the CPU and the
flags that decide int8's and bf16's worth (AVX2, AVX-512F, VNNI, BF16, AMX).

Examples::

    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast reference \\
        --batch 16 --shape 224 224 --mode infer
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast reference \\
        --batch 1 --shape 800 1216 --mode train --repeats 3
    python tools/analysis_tools/benchmark.py configs/rmt/mask-rcnn_rmt-t_fpn_1x_coco.py \\
        --impl fast reference --batch 2 --shape 800 1216 --device cuda --amp bf16
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast --batch 16 --shape 224 224 \\
        --mode infer --onnx rmt-t.onnx
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast --batch 16 --shape 224 224 \\
        --mode infer --onnx rmt-t.onnx rmt-t_int8.onnx --runtime onnxruntime openvino --precision f32 bf16
    python tools/analysis_tools/benchmark.py --backbone rest-lite --impl fast --upstream-repo ../ResT \\
        --batch 1 --shape 800 1216 --mode train --threads 2
"""
import argparse
import importlib.util
import multiprocessing as mp
import re
import statistics
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from types import ModuleType
from typing import Dict, List, Optional, Tuple

import torch

#: ``--backbone`` TYPE -> the registered backbone.
BACKBONE_TYPES = {'rmt': 'RMT', 'rest': 'ResT', 'resmlp': 'ResMLP'}
UPSTREAM_IMPL = 'upstream'
#: A worker's job: (its label in the table, torch impl, precision, runtime or None for torch, file).
Contender = Tuple[str, Optional[str], str, Optional[str], Optional[str]]
#: Proposals given to two-stage detectors in tensor mode (the RPN's test-time count).
TENSOR_MODE_PROPOSALS = 1000


UPSTREAM_REST = Path(__file__).resolve().parent / 'upstream_rest.py'


def import_by_path(path: Path) -> ModuleType:
    """The Python file at ``path`` (a script beside this one) as a module."""
    spec = importlib.util.spec_from_file_location(f'benchmark_{path.stem}', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    from mmrmt.deployment.runtime import PRECISIONS, RUNTIMES
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', nargs='?', help='a config file: benchmark its whole model '
                        '(predict for infer, loss + backward for train)')
    parser.add_argument('--backbone', help="a backbone as TYPE-ARCH, e.g. 'rmt-t', 'rest-lite'")
    parser.add_argument('--impl', nargs='+', default=[None],
                        help="values of the backbone's impl to compare, e.g. 'fast reference' "
                             "(default: the backbone's default, no comparison)")
    parser.add_argument('--batch', type=int, default=1)
    parser.add_argument('--shape', type=int, nargs=2, default=(224, 224), metavar=('H', 'W'))
    parser.add_argument('--mode', nargs='+', choices=('infer', 'train'), default=['infer', 'train'])
    parser.add_argument('--repeats', type=int, default=5, help='timed iterations per implementation')
    parser.add_argument('--warmup', type=int, default=1, help='untimed iterations first')
    parser.add_argument('--amp', choices=('none', 'bf16', 'fp16'), default='none',
                        help='autocast dtype of the forward pass')
    parser.add_argument('--device', default='cpu', help="'cpu' or 'cuda'")
    parser.add_argument('--threads', type=int, help='torch CPU threads (default: torch\'s)')
    parser.add_argument('--onnx', metavar='FILE', nargs='+',
                        help='also time these files (exported by tools/deployment/pytorch2onnx.py, '
                        'e.g. float32 and int8 from quantize_onnx.py) in --runtime (infer mode, CPU)')
    parser.add_argument('--runtime', nargs='+', choices=RUNTIMES, default=['onnxruntime'],
                        help='with --onnx: the runtimes each file runs in (default onnxruntime)')
    parser.add_argument('--precision', nargs='+', choices=PRECISIONS, default=['f32'],
                        help="with --onnx: f32 and/or bf16, torch's autocast and OpenVINO's inference "
                             'precision (bf16: CPUs with AVX-512 BF16 or AMX; onnxruntime runs f32 only)')
    parser.add_argument('--upstream-repo', metavar='PATH', help="with --backbone rest-ARCH: also run the "
                        "authors' ResT from this clone of github.com/wofmanaf/ResT, same weights")
    args = parser.parse_args(argv)
    args.weights = None  # set by main with --upstream-repo
    check_args(args)
    return args


def parse_backbone(name: str) -> Tuple[str, str]:
    """The registered type and the arch of ``--backbone TYPE-ARCH`` (e.g. 'rmt-t' -> ('RMT', 't')).

    Raises:
        ValueError: One line naming the known types.
    """
    backbone, _, arch = name.lower().partition('-')
    if backbone not in BACKBONE_TYPES or not arch:
        raise ValueError(f'--backbone must be TYPE-ARCH with TYPE in {sorted(BACKBONE_TYPES)}, '
                         f'e.g. rmt-t; got {name!r}.')
    return BACKBONE_TYPES[backbone], arch


def check_backbone(name: str, impls: List[Optional[str]]) -> None:
    """Fail unless ``name`` is a backbone and each of ``impls`` one of its implementations.

    Only RMT has two (its ``impl`` argument checks the values); ResT is
    compared with the authors' code through ``--upstream-repo`` instead.

    Raises:
        PreflightError: One line naming the problem.
    """
    from mmrmt.utils import PreflightError
    try:
        backbone, _ = parse_backbone(name)
    except ValueError as error:
        raise PreflightError(str(error)) from error
    check_impls(backbone, impls)


def backbone_type(config) -> str:
    """The registered name of a config's backbone type ('RMT' for 'RMT' or 'mmrmt.RMT')."""
    kind = config.model.backbone.type
    return (kind if isinstance(kind, str) else kind.__name__).rpartition('.')[2]


def check_impls(backbone: str, impls: List[Optional[str]]) -> None:
    """Fail unless each of ``impls`` is an implementation of the backbone type ``backbone``.

    Raises:
        PreflightError: One line naming the problem.
    """
    from mmrmt.utils import PreflightError
    others = [impl for impl in impls if impl not in (None, 'fast')]
    if backbone != 'RMT' and others:
        compare = ("; compare ResT with the authors' code through --upstream-repo CLONE"
                   if backbone == 'ResT' else '')
        raise PreflightError(f'--impl {others[0]}: {backbone} has one implementation, give --impl fast or '
                             f'no --impl (--impl compares the forms of RMT){compare}.')


def check_args(args: argparse.Namespace) -> None:
    """Fail on argument combinations the benchmark cannot run, before any worker starts.

    Raises:
        PreflightError: One line naming the problem.
    """
    from mmrmt.utils import PreflightError, read_config
    if (args.config is None) == (args.backbone is None):
        raise PreflightError('give either a config file or --backbone TYPE-ARCH, not both or neither.')
    if args.config is not None:
        config = read_config(args.config)  # here, in one line: the workers that build its model would die of it
        check_cpu_amp(args, config)
        check_impls(backbone_type(config), args.impl)
    if args.device == 'cuda' and not torch.cuda.is_available():
        raise PreflightError('--device cuda, but torch sees no CUDA device.')
    if args.device not in ('cpu', 'cuda'):
        raise PreflightError(f"--device must be 'cpu' or 'cuda', got {args.device!r}.")
    if args.device == 'cpu' and not Path('/proc/self/clear_refs').exists():
        raise PreflightError('CPU peak memory is read from /proc/self (Linux only).')
    if len(set(args.impl)) != len(args.impl):
        raise PreflightError(f'--impl lists an implementation twice: {args.impl}.')
    if args.backbone is not None:
        check_backbone(args.backbone, args.impl)
    if args.repeats < 1 or args.warmup < 0 or args.batch < 1:
        raise PreflightError('--repeats and --batch must be >= 1 and --warmup >= 0.')
    if args.onnx is not None:
        if args.mode != ['infer'] or args.device != 'cpu' or args.amp != 'none':
            raise PreflightError('--onnx times inference on the CPU: give --mode infer, no --device cuda, no '
                                 '--amp (--precision f32 bf16 compares precisions).')
        check_runtimes(args)
        from mmrmt.utils import check_graph_file
        for path in args.onnx:
            check_graph_file(path, '--onnx file')
    elif args.runtime != ['onnxruntime'] or args.precision != ['f32']:
        raise PreflightError('--runtime and --precision choose how --onnx files run: add --onnx FILE.')
    if args.upstream_repo is not None:
        check_upstream_repo = import_by_path(UPSTREAM_REST).check_upstream_repo
        if not (args.backbone or '').lower().startswith('rest-') or args.onnx:
            raise PreflightError('--upstream-repo compares ResT backbones: give --backbone rest-ARCH '
                                 '(e.g. rest-lite), no config, no --onnx.')
        try:
            check_upstream_repo(args.upstream_repo)
        except FileNotFoundError as error:
            raise PreflightError(str(error)) from error


def check_cpu_amp(args: argparse.Namespace, config) -> None:
    """Fail where a detector under CPU autocast would reach mmcv's float32-only CPU kernels: every
    prediction's NMS, and a two-stage detector's RPN NMS and RoIAlign in training too.

    Raises:
        PreflightError: One line naming the kernels and what to time instead.
    """
    from mmrmt.utils import PreflightError
    detector = config.get('default_scope') == 'mmdet'
    two_stage = 'rpn_head' in config.get('model', {})
    if args.device == 'cpu' and args.amp != 'none' and detector and ('infer' in args.mode or two_stage):
        raise PreflightError(f"--amp {args.amp} on the CPU: mmcv's CPU nms and RoIAlign take float32 only, so "
                             f"this detector's {'prediction' if 'infer' in args.mode else 'training'} cannot run "
                             'under autocast; time the bf16 model with --onnx FILE --precision f32 bf16 (tensor '
                             'mode, RoIAlign in float32) or the backbone with --backbone TYPE-ARCH --amp bf16')


def check_runtimes(args: argparse.Namespace) -> None:
    """Fail unless every --runtime is installed and runs every --precision (bf16 in OpenVINO,
    onnxruntime's rows f32 only), and torch's bf16 autocast has native bf16.

    Raises:
        PreflightError: One line naming the problem and the fix.
    """
    from mmrmt.deployment.runtime import check_runtime, cpu_features
    for precision in args.precision:
        for runtime in args.runtime:
            if not (runtime == 'onnxruntime' and precision == 'bf16' and 'openvino' in args.runtime):
                check_runtime(runtime, precision)
    features = cpu_features()
    if 'bf16' in args.precision and not features.bf16:
        from mmrmt.utils import PreflightError
        raise PreflightError(f"--precision bf16: this CPU ({features.model}) has no AVX-512 BF16 or AMX, where "
                             "torch's bf16 autocast is emulated; use --precision f32")


def runtime_pairs(args: argparse.Namespace) -> List[Tuple[str, str]]:
    """(runtime, precision) of the rows of each --onnx file: onnxruntime in f32 only."""
    return [(runtime, precision) for runtime in args.runtime for precision in args.precision
            if runtime == 'openvino' or precision == 'f32']


def check_onnx_inputs(args: argparse.Namespace) -> None:
    """Fail with one line if an --onnx file does not take the benchmark's inputs.

    Raises:
        PreflightError: Naming the file and what it takes.
    """
    from mmrmt.utils import PreflightError
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
    from mmrmt.deployment.runtime import file_inputs, shape_mismatch
    declared = file_inputs(path)
    given = [(batch, 3, *shape)] + [(TENSOR_MODE_PROPOSALS, 4)] * (len(declared) == 2)
    return shape_mismatch(declared, given)


def graph_batches(path: str, batch: int, shape: Tuple[int, int]) -> str:
    """How an --onnx file runs the benchmark's batch: some images a run, or the whole batch."""
    from mmrmt.deployment.runtime import ImageChunks, onnx_graph
    images = ImageChunks(onnx_graph(path)).images_per_run((3, *shape))
    if images is None:
        return 'the whole batch a run (a fixed batch, or not one image an output row)'
    return f'{min(images, batch)} of the {batch} images a run (a dynamic batch, in chunks as eager)'


def contenders(args: argparse.Namespace) -> List[Contender]:
    """The torch implementations (with --onnx at each --precision), then each --onnx file in each
    runtime and precision ('onnxruntime FILE', 'openvino bf16 FILE'), or the authors' ResT with
    --upstream-repo."""
    from mmrmt.deployment.runtime import runtime_label
    precisions = args.precision if args.onnx else ['f32']
    eager = [(f'{impl or "default"}{" bf16 autocast" * (precision == "bf16")}', impl, precision, None, None)
             for precision in precisions for impl in args.impl]
    graphs = [(f'{runtime_label(runtime, precision)} {path}', None, precision, runtime, path)
              for path in args.onnx or () for runtime, precision in runtime_pairs(args)]
    upstream = [(UPSTREAM_IMPL, UPSTREAM_IMPL, 'f32', None, None)] if args.upstream_repo else []
    return eager + graphs + upstream


# --- worker side --------------------------------------------------------------------
def build_backbone(name: str, impl: Optional[str], weights: Optional[str] = None) -> torch.nn.Module:
    """The backbone TYPE-ARCH; ``weights``: an upstream-layout checkpoint it loads (random init otherwise).

    Built through mmdet's or mmseg's registry, whichever is installed; ``impl``
    is RMT's (ResT's and ResMLP's one implementation is 'fast' or None).
    """
    import mmrmt  # noqa: F401  (registers the backbones)
    from mmrmt.registry import TARGET_REGISTRIES
    backbone, arch = parse_backbone(name)
    cfg = dict(type=backbone, arch=arch)
    if impl is not None and backbone == 'RMT':
        cfg['impl'] = impl
    if weights is not None:
        cfg['init_cfg'] = dict(type='Pretrained', checkpoint=weights)
    model = TARGET_REGISTRIES[0].build(cfg)
    if weights is not None:
        model.init_weights()
    return model


def save_upstream_weights(args: argparse.Namespace, directory: str) -> str:
    """Build the authors' model once (seed 0) and save its state dict for every worker; return the path."""
    load_upstream_module = import_by_path(UPSTREAM_REST).load_upstream_module
    torch.manual_seed(0)
    arch = args.backbone.lower().partition('-')[2]
    factory = getattr(load_upstream_module(args.upstream_repo), f'rest_{arch}', None)
    if factory is None:
        raise ValueError(f'--upstream-repo: the authors\' code has no rest_{arch}; the variants are lite, small, '
                         'base, large.')
    path = str(Path(directory) / f'upstream_rest_{arch}.pth')
    torch.save({'model': factory().state_dict()}, path)
    return path


def build_whole_model(config: str, impl: Optional[str]) -> Tuple[torch.nn.Module, str]:
    from mmrmt.utils import build_cpu_model, read_config
    cfg = read_config(config)
    scope = cfg.get('default_scope', 'mmdet')
    if scope not in ('mmdet', 'mmseg'):
        raise ValueError(f"{config}: default_scope must be 'mmdet' or 'mmseg', got {scope!r}.")
    if impl is not None and backbone_type(cfg) == 'RMT':  # ResT's and ResMLP's one implementation: 'fast' or None
        cfg.model.backbone.impl = impl
    cfg.model.backbone.pop('init_cfg', None)  # random weights: no download, same speed
    return build_cpu_model(cfg), scope


def synthetic_samples(scope: str, batch: int, shape: Tuple[int, int], device: str) -> list:
    """Data samples with a few random boxes and masks, or a label map, per image.

    Every label is class 0, which every model has; values do not change the cost.
    """
    import numpy as np
    height, width = shape
    meta = dict(img_shape=shape, ori_shape=shape, pad_shape=shape, batch_input_shape=shape,
                scale_factor=(1.0, 1.0))
    generator = torch.Generator().manual_seed(0)
    samples = []
    for _ in range(batch):
        if scope == 'mmdet':
            from mmdet.structures import DetDataSample
            from mmdet.structures.mask import BitmapMasks
            from mmengine.structures import InstanceData
            corners = torch.rand(5, 2, 2, generator=generator) * torch.tensor([width, height])
            boxes = torch.cat((corners.min(1).values, corners.max(1).values + 8), 1)
            masks = np.zeros((5, height, width), dtype=np.uint8)
            for mask, (x0, y0, x1, y1) in zip(masks, boxes.int().tolist()):
                mask[y0:y1, x0:x1] = 1
            sample = DetDataSample(metainfo=meta)
            sample.gt_instances = InstanceData(
                bboxes=boxes, labels=torch.zeros(5, dtype=torch.long),
                masks=BitmapMasks(masks, height, width))
        else:
            from mmengine.structures import PixelData
            from mmseg.structures import SegDataSample
            sample = SegDataSample(metainfo=meta)
            sample.gt_sem_seg = PixelData(data=torch.zeros(1, height, width, dtype=torch.long))
        samples.append(sample.to(device))
    return samples


def peak_baseline(device: str) -> int:
    """Start peak tracking now; return the current usage in bytes."""
    if device == 'cuda':
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated()
    with open('/proc/self/clear_refs', 'w') as refs:
        refs.write('5')  # resets VmHWM to the current VmRSS
    return proc_status_kb('VmRSS') * 1024


def peak_now(device: str) -> int:
    if device == 'cuda':
        return torch.cuda.max_memory_allocated()
    return proc_status_kb('VmHWM') * 1024


def proc_status_kb(field: str) -> int:
    with open('/proc/self/status') as status:
        return int(re.search(rf'^{field}:\s+(\d+) kB', status.read(), re.M).group(1))


def tensor_mode_inputs(args: argparse.Namespace, two_stage: bool) -> Tuple[torch.Tensor, ...]:
    """The images (and proposals) every --onnx contender runs on, alike in every worker."""
    from mmrmt.deployment.export import random_proposals
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(args.batch, 3, *args.shape, generator=generator)
    if not two_stage:
        return (images, )
    return images, random_proposals(TENSOR_MODE_PROPOSALS, *args.shape, generator)


def graph_worker(args: argparse.Namespace, path: str, runtime: str, precision: str, conn) -> None:
    """Open ``path`` in ``runtime`` at ``precision``, then run it once per 'step' message."""
    from mmrmt.deployment.runtime import open_graph, run_session
    if args.threads:
        torch.set_num_threads(args.threads)
    session = open_graph(path, runtime, precision, args.threads)
    inputs = tensor_mode_inputs(args, two_stage=len(session.get_inputs()) == 2)
    serve(conn, lambda: run_session(session, inputs), 'cpu')


def worker(args: argparse.Namespace, contender: Contender, mode: str, conn) -> None:
    """Build one model, then run one iteration per 'step' message."""
    _, impl, precision, runtime, path = contender
    if runtime is not None:
        return graph_worker(args, path, runtime, precision, conn)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.onnx:
        from mmrmt.deployment.export import TensorModeModel
        model = TensorModeModel(build_whole_model(args.config, impl)[0] if args.config
                                else build_backbone(args.backbone, impl)).eval()
        inputs = tensor_mode_inputs(args, model.kind == 'two_stage')
        autocast = torch.autocast('cpu', dtype=torch.bfloat16) if precision == 'bf16' else nullcontext()

        def tensor_mode() -> List[torch.Tensor]:
            with torch.no_grad(), autocast:
                return [output.float() for output in model(*inputs)]

        # bf16 autocast on the CPU: mmcv's RoIAlign has no bf16 kernel (check_cpu_amp refuses --amp itself)
        from mmrmt.deployment.export import float32_roi_pooling
        with float32_roi_pooling(model):
            return serve(conn, tensor_mode, 'cpu')
    if impl == UPSTREAM_IMPL:
        upstream_rest = import_by_path(UPSTREAM_REST)
        build_upstream, upstream_features = upstream_rest.build_upstream, upstream_rest.upstream_features
        model = build_upstream(args.upstream_repo, args.backbone.partition('-')[2], args.weights)
        samples = None

        def forward(images: torch.Tensor) -> List[torch.Tensor]:
            return upstream_features(model, images)
    else:
        if args.config:
            model, scope = build_whole_model(args.config, impl)
            samples = synthetic_samples(scope, args.batch, tuple(args.shape), args.device)
        else:
            model, samples = build_backbone(args.backbone, impl, args.weights), None
        forward = model
    model = model.to(args.device).train(mode == 'train')
    inputs = torch.randn(args.batch, 3, *args.shape, device=args.device)
    amp = (torch.autocast(args.device, dtype=getattr(torch, {'bf16': 'bfloat16', 'fp16': 'float16'}[args.amp]))
           if args.amp != 'none' else nullcontext())

    def iteration() -> None:
        if mode == 'infer':
            with torch.no_grad(), amp:
                model(inputs, samples, mode='predict') if samples else forward(inputs)
        else:
            with amp:
                if samples:
                    loss = model.parse_losses(model(inputs, samples, mode='loss'))[0]
                else:
                    loss = sum(out.float().square().mean() for out in forward(inputs))
            loss.backward()
            model.zero_grad(set_to_none=True)
        if args.device == 'cuda':
            torch.cuda.synchronize()

    serve(conn, iteration, args.device)


def serve(conn, iteration, device: str) -> None:
    """Report 'ready', time one ``iteration()`` per 'step', then send the peak memory added, the
    process's peak resident set and the last iteration's outputs (numpy arrays; None for iterations
    that return none)."""
    build_peak = proc_status_kb('VmHWM') * 1024  # imports and the build (a runtime's graph optimisation)
    baseline = peak_baseline(device)
    conn.send('ready')
    outputs = None
    while conn.recv() == 'step':
        start = time.perf_counter()
        outputs = iteration()
        conn.send(time.perf_counter() - start)
    peak = peak_now(device) - baseline
    process_peak = max(build_peak, proc_status_kb('VmHWM') * 1024)
    arrays = None if outputs is None else [output.numpy() if isinstance(output, torch.Tensor) else output
                                           for output in outputs]
    conn.send((peak, process_peak, arrays))


# --- parent side ----------------------------------------------------------------
def run_mode(args: argparse.Namespace, mode: str) -> Dict[str, Tuple[float, int, int, Optional[list]]]:
    """Median seconds, peak bytes added, process peak bytes and last outputs of each contender, by label,
    interleaved."""
    context = mp.get_context('spawn')
    workers = {}
    for contender in contenders(args):
        parent_end, child_end = context.Pipe()
        process = context.Process(target=worker, args=(args, contender, mode, child_end), daemon=True)
        process.start()
        workers[contender[0]] = (process, parent_end)
    try:
        for impl, (process, conn) in workers.items():
            receive(conn, process, impl)  # 'ready' once the model is built
        times = {impl: [] for impl in workers}
        for step in range(args.warmup + args.repeats):
            for impl, (_, conn) in workers.items():
                conn.send('step')
                elapsed = receive(conn, workers[impl][0], impl)
                if step >= args.warmup:
                    times[impl].append(elapsed)
        results = {}
        for impl, (_, conn) in workers.items():
            conn.send('done')
            results[impl] = (statistics.median(times[impl]), *receive(conn, workers[impl][0], impl))
        return results
    finally:
        for process, _ in workers.values():
            process.join(timeout=60)
            if process.is_alive():
                process.terminate()


def receive(conn, process, label: str):
    """The worker's next message; an error naming it if it died (traceback above)."""
    while not conn.poll(1):
        if not process.is_alive():
            raise RuntimeError(f'the worker of {label} died (exit code {process.exitcode}: '
                               'an exception printed above, or -9: killed, out of memory).')
    return conn.recv()


def format_table(args: argparse.Namespace, results: Dict[str, dict]) -> str:
    """The Markdown table: one row a contender and mode; with --onnx also each one's output error."""
    label = (UPSTREAM_IMPL if args.upstream_repo else 'reference' if 'reference' in args.impl
             else args.impl[0] or 'default')
    error_column = ' error vs float32 |' if args.onnx else ''
    lines = ['| impl | mode | median s | img/s | peak MB | speed-up vs ' f'{label} | memory vs {label} | '
             'process peak MB |' + error_column, '|---|---|---|---|---|---|---|---|' + '---|' * bool(args.onnx)]
    for mode, per_impl in results.items():
        base_time, base_peak, _, _ = per_impl[label]
        references = {runtime is None: per_impl[name][3] for name, _, _, runtime, _ in reversed(contenders(args))}
        runtimes = {name: runtime for name, _, _, runtime, _ in contenders(args)}
        for impl, (seconds, peak, process_peak, outputs) in per_impl.items():
            error = f' {output_error(references[runtimes[impl] is None], outputs)} |' if args.onnx else ''
            lines.append(f'| {impl} | {mode} | {seconds:.3f} | {args.batch / seconds:.2f} | '
                         f'{peak / 2**20:.0f} | {base_time / seconds:.2f}x | '
                         f'{peak / base_peak if base_peak > 0 else float("nan"):.2f}x | '
                         f'{process_peak / 2**20:.0f} |' + error)
    return '\n'.join(lines)


def output_error(expected: list, actual: list) -> str:
    """max |actual - expected| / max |expected| over the outputs (mmrmt.deployment.runtime.relative_difference),
    or 'n/a' for outputs of another kind."""
    from mmrmt.deployment.runtime import relative_difference
    try:
        return f'{relative_difference([torch.from_numpy(array) for array in expected], actual):.1e}'
    except ValueError:
        return 'n/a'


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    check_onnx_inputs(args)
    model = args.config or args.backbone
    print(f'# {model}: batch {args.batch}, input {args.shape[0]}x{args.shape[1]}, {args.device}, '
          f'amp {args.amp}, threads {args.threads or torch.get_num_threads()}, '
          f'{args.warmup} warm-up + {args.repeats} timed iterations, torch {torch.__version__}')
    from mmrmt.deployment.runtime import cpu_features
    print(f'# CPU {cpu_features().summary()}')
    if args.onnx:
        versions = ', '.join(f'{runtime} {importlib.import_module(runtime).__version__}' for runtime in args.runtime)
        print(f'# tensor mode in torch and {", ".join(args.onnx)} in {versions}')
        for path in args.onnx:
            print(f'# {path}: {graph_batches(path, args.batch, tuple(args.shape))}')
    with tempfile.TemporaryDirectory() as directory:
        if args.upstream_repo:
            args.weights = save_upstream_weights(args, directory)
            print(f"# the authors' ResT from {args.upstream_repo}, same weights (ours loaded them through "
                  'its checkpoint loader)')
        results = {mode: run_mode(args, mode) for mode in args.mode}
    print(format_table(args, results))
    sys.stdout.flush()


if __name__ == '__main__':
    from mmrmt.utils import run_main  # here, not on top: the spawned workers import this file too
    run_main(main)
