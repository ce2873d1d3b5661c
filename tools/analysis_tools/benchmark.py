"""Time and peak memory of a backbone or a config's whole model, per attention implementation.

Each (mode, implementation) pair runs in its own fresh worker process; the
workers of one mode live side by side and take turns, one iteration each,
so that every implementation sees the same machine load. Reported per pair:
the median seconds of the timed iterations (after warm-up), images per
second, and the peak memory the iterations added on top of the built model
and its input — on CPU the growth of the process's peak resident set
(``VmHWM``, reset after the build through ``/proc/self/clear_refs``), on
CUDA ``torch.cuda.max_memory_allocated`` over the allocation after the
build. Ratios compare each implementation with the reference one.

ResT has one implementation; ``--impl fast reference`` compares it with
the step-by-step reference of the tests (``tests/helpers/rest_reference.py``).
With ``--upstream-repo PATH`` (a clone of the authors' wofmanaf/ResT) a
further worker runs their ResT (``tools/analysis_tools/upstream_rest.py``)
with the same weights: the parent saves their freshly built model's state
dict, which our backbone loads through its checkpoint loader.

With ``--onnx FILE`` (infer mode, CPU) a further worker times the exported
file in onnxruntime, interleaved with the torch workers, which then run the
same tensor-mode forward on the same inputs (``mmrmt.deployment``: for
two-stage detectors 1000 given proposals instead of the RPN's decoding and
NMS) instead of ``predict``.

Examples::

    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast reference \\
        --batch 16 --shape 224 224 --mode infer
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast reference \\
        --batch 1 --shape 800 1216 --mode train --repeats 3
    python tools/analysis_tools/benchmark.py configs/rmt/mask-rcnn_rmt-t_fpn_1x_coco.py \\
        --impl fast reference --batch 2 --shape 800 1216 --device cuda --amp bf16
    python tools/analysis_tools/benchmark.py --backbone rmt-t --impl fast --batch 16 --shape 224 224 \\
        --mode infer --onnx rmt-t.onnx
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

BACKBONE_TYPES = {'rmt': 'RMT', 'rest': 'ResT', 'resmlp': 'ResMLP'}
ONNX_IMPL = 'onnxruntime'
UPSTREAM_IMPL = 'upstream'
#: Proposals given to two-stage detectors in tensor mode (the RPN's test-time count).
TENSOR_MODE_PROPOSALS = 1000


UPSTREAM_REST = Path(__file__).resolve().parent / 'upstream_rest.py'


def import_by_path(path: Path) -> ModuleType:
    """The Python file at ``path`` as a module (a script beside this one, or the tests' reference ResT)."""
    spec = importlib.util.spec_from_file_location(f'benchmark_{path.stem}', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
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
                        'e.g. float32 and int8 from quantize_onnx.py) in onnxruntime (infer mode, CPU)')
    parser.add_argument('--upstream-repo', metavar='PATH', help="with --backbone rest-ARCH: also run the "
                        "authors' ResT from this clone of github.com/wofmanaf/ResT, same weights")
    args = parser.parse_args(argv)
    args.weights = None  # set by main with --upstream-repo
    check_args(args)
    return args


def check_args(args: argparse.Namespace) -> None:
    """Fail on argument combinations the benchmark cannot run, before any worker starts.

    Raises:
        PreflightError: One line naming the problem.
    """
    from mmrmt.utils import PreflightError, read_config
    if (args.config is None) == (args.backbone is None):
        raise PreflightError('give either a config file or --backbone TYPE-ARCH, not both or neither.')
    if args.config is not None:
        read_config(args.config)  # here, in one line: the workers that build its model would die of it
    if args.device == 'cuda' and not torch.cuda.is_available():
        raise PreflightError('--device cuda, but torch sees no CUDA device.')
    if args.device not in ('cpu', 'cuda'):
        raise PreflightError(f"--device must be 'cpu' or 'cuda', got {args.device!r}.")
    if args.device == 'cpu' and not Path('/proc/self/clear_refs').exists():
        raise PreflightError('CPU peak memory is read from /proc/self (Linux only).')
    if len(set(args.impl)) != len(args.impl):
        raise PreflightError(f'--impl lists an implementation twice: {args.impl}.')
    if args.repeats < 1 or args.warmup < 0 or args.batch < 1:
        raise PreflightError('--repeats and --batch must be >= 1 and --warmup >= 0.')
    if args.onnx is not None:
        if args.mode != ['infer'] or args.device != 'cpu' or args.amp != 'none':
            raise PreflightError('--onnx times inference on the CPU in float32: give --mode infer, no '
                                 '--device cuda, no --amp.')
        from mmrmt.utils import check_graph_file
        for path in args.onnx:
            check_graph_file(path, '--onnx file')
    if args.upstream_repo is not None:
        check_upstream_repo = import_by_path(UPSTREAM_REST).check_upstream_repo
        if not (args.backbone or '').lower().startswith('rest-') or args.onnx:
            raise PreflightError('--upstream-repo compares ResT backbones: give --backbone rest-ARCH '
                                 '(e.g. rest-lite), no config, no --onnx.')
        try:
            check_upstream_repo(args.upstream_repo)
        except FileNotFoundError as error:
            raise PreflightError(str(error)) from error


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
    from mmrmt.deployment.session import file_inputs, shape_mismatch
    declared = file_inputs(path)
    given = [(batch, 3, *shape)] + [(TENSOR_MODE_PROPOSALS, 4)] * (len(declared) == 2)
    return shape_mismatch(declared, given)


def contenders(args: argparse.Namespace) -> List[Optional[str]]:
    """The torch implementations, then 'onnxruntime FILE' for each --onnx file, or the authors' ResT
    with --upstream-repo."""
    return [*args.impl, *(f'{ONNX_IMPL} {path}' for path in args.onnx or ()),
            *([UPSTREAM_IMPL] if args.upstream_repo else [])]


# --- worker side --------------------------------------------------------------------
def build_backbone(name: str, impl: Optional[str], weights: Optional[str] = None) -> torch.nn.Module:
    """The backbone TYPE-ARCH; ``weights``: an upstream-layout checkpoint it loads (random init otherwise).

    ResT has one implementation: ``impl`` 'fast' is it, 'reference' the
    step-by-step model of the tests.
    """
    import mmrmt  # noqa: F401  (registers the backbones)
    from mmdet.registry import MODELS
    backbone, _, arch = name.lower().partition('-')
    if backbone not in BACKBONE_TYPES or not arch:
        raise ValueError(f'--backbone must be TYPE-ARCH with TYPE in {sorted(BACKBONE_TYPES)}, '
                         f'e.g. rmt-t; got {name!r}.')
    cfg = dict(type=BACKBONE_TYPES[backbone], arch=arch)
    if backbone == 'rest' and impl == 'reference':
        reference = import_by_path(Path(__file__).resolve().parents[2] / 'tests' / 'helpers' / 'rest_reference.py')
        model = reference.ReferenceResT(arch)
        if weights is not None:
            model.load_state_dict(torch.load(weights, weights_only=True)['model'], strict=False)
        return model
    if backbone == 'rest' and impl not in (None, 'fast'):
        raise ValueError(f"--impl for ResT: 'fast' (the backbone) or 'reference', got {impl!r}.")
    if impl is not None and backbone != 'rest':
        cfg['impl'] = impl
    if weights is not None:
        cfg['init_cfg'] = dict(type='Pretrained', checkpoint=weights)
    model = MODELS.build(cfg)
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
    if impl is not None:
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
    from mmrmt.deployment.tensor_mode import random_proposals
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(args.batch, 3, *args.shape, generator=generator)
    if not two_stage:
        return (images, )
    return images, random_proposals(TENSOR_MODE_PROPOSALS, *args.shape, generator)


def onnx_worker(args: argparse.Namespace, path: str, conn) -> None:
    """Open ``path`` in onnxruntime, then run it once per 'step' message."""
    from mmrmt.deployment.session import onnxruntime_session, run_session
    if args.threads:
        torch.set_num_threads(args.threads)
    session = onnxruntime_session(path, args.threads)
    inputs = tensor_mode_inputs(args, two_stage=len(session.get_inputs()) == 2)
    serve(conn, lambda: run_session(session, inputs), 'cpu')


def worker(args: argparse.Namespace, impl: Optional[str], mode: str, conn) -> None:
    """Build one model, then run one iteration per 'step' message."""
    if impl is not None and impl.startswith(ONNX_IMPL):
        return onnx_worker(args, impl.partition(' ')[2], conn)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.onnx:
        from mmrmt.deployment import TensorModeModel
        model = TensorModeModel(build_whole_model(args.config, impl)[0] if args.config
                                else build_backbone(args.backbone, impl)).eval()
        inputs = tensor_mode_inputs(args, model.kind == 'two_stage')

        def tensor_mode() -> None:
            with torch.no_grad():
                model(*inputs)

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
    """Report 'ready', time one ``iteration()`` per 'step', then send the peak memory added."""
    baseline = peak_baseline(device)
    conn.send('ready')
    while conn.recv() == 'step':
        start = time.perf_counter()
        iteration()
        conn.send(time.perf_counter() - start)
    conn.send(peak_now(device) - baseline)


# --- parent side ----------------------------------------------------------------
def run_mode(args: argparse.Namespace, mode: str) -> Dict[Optional[str], Tuple[float, int]]:
    """Median seconds and peak bytes of each implementation, interleaved."""
    context = mp.get_context('spawn')
    workers = {}
    for impl in contenders(args):
        parent_end, child_end = context.Pipe()
        process = context.Process(target=worker, args=(args, impl, mode, child_end), daemon=True)
        process.start()
        workers[impl] = (process, parent_end)
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
            results[impl] = (statistics.median(times[impl]), receive(conn, workers[impl][0], impl))
        return results
    finally:
        for process, _ in workers.values():
            process.join(timeout=60)
            if process.is_alive():
                process.terminate()


def receive(conn, process, impl: Optional[str]):
    """The worker's next message; an error naming it if it died (traceback above)."""
    while not conn.poll(1):
        if not process.is_alive():
            raise RuntimeError(f'the worker of --impl {impl} died (exit code {process.exitcode}: '
                               'an exception printed above, or -9: killed, out of memory).')
    return conn.recv()


def format_table(args: argparse.Namespace, results: Dict[str, dict]) -> str:
    base = (UPSTREAM_IMPL if args.upstream_repo else 'reference' if 'reference' in args.impl
            else args.impl[0])
    label = base or 'default'
    lines = ['| impl | mode | median s | img/s | peak MB | speed-up vs ' f'{label} | memory vs {label} |',
             '|---|---|---|---|---|---|---|']
    for mode, per_impl in results.items():
        base_time, base_peak = per_impl[base]
        for impl, (seconds, peak) in per_impl.items():
            lines.append(f'| {impl or "default"} | {mode} | {seconds:.3f} | {args.batch / seconds:.2f} | '
                         f'{peak / 2**20:.0f} | {base_time / seconds:.2f}x | '
                         f'{peak / base_peak if base_peak > 0 else float("nan"):.2f}x |')
    return '\n'.join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    check_onnx_inputs(args)
    model = args.config or args.backbone
    print(f'# {model}: batch {args.batch}, input {args.shape[0]}x{args.shape[1]}, {args.device}, '
          f'amp {args.amp}, threads {args.threads or torch.get_num_threads()}, '
          f'{args.warmup} warm-up + {args.repeats} timed iterations, torch {torch.__version__}')
    if args.onnx:
        import onnxruntime
        print(f'# tensor mode in torch and {", ".join(args.onnx)} in onnxruntime {onnxruntime.__version__}')
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
