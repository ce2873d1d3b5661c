"""What torch.compile (Inductor) gives a backbone on the CPU at hand: graphs, compile time, speed.

    python tools/analysis_tools/compile_report.py --backbone rmt-t [--batch 16] [--shape 224 224]
        [--mode infer|train] [--amp none|bf16] [--repeats 5] [--threads N] [--options KEY=VALUE ...]

It prints dynamo's graph count and graph breaks for the forward (``torch._dynamo.explain``), the
compile time (the first compiled iteration less an eager one), and the median seconds of eager
and compiled iterations, interleaved one by one after a warm-up of each. ``infer``: the forward
without autograd; ``train``: forward and backward of the features' mean square. ``--amp bf16``:
both under CPU bf16 autocast (refused on CPUs without native bf16, as the tools' ``--amp``).
``--options``: Inductor options of ``torch.compile(options=...)``, e.g. ``freezing=True`` (weights folded
into the inference graph and prepacked for oneDNN) or ``layout_optimization=False`` (convolutions kept in
the model's memory layout); a config's training step takes them as ``compile =
dict(options=dict(layout_optimization=False))`` (mmengine passes the dict to torch.compile).
"""
import argparse
import statistics
import time
from contextlib import nullcontext
from typing import Callable, List, Optional

import torch

from mmrmt.benchmark.checks import check_backbone, check_threads
from mmrmt.benchmark.compile_options import format_compile_options, parse_compile_options
from mmrmt.benchmark.models import build_backbone
from mmrmt.utils import PreflightError, check_input_size, run_main
from mmrmt.utils.amp import amp_dtype


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--backbone', required=True, help="TYPE-ARCH, e.g. 'rmt-t', 'rest-lite'")
    parser.add_argument('--batch', type=int, default=1)
    parser.add_argument('--shape', type=int, nargs=2, default=(224, 224), metavar=('H', 'W'))
    parser.add_argument('--mode', choices=('infer', 'train'), default='infer')
    parser.add_argument('--amp', choices=('none', 'bf16'), default='none', help='CPU autocast dtype')
    parser.add_argument('--repeats', type=int, default=5, help='timed iterations of each')
    parser.add_argument('--threads', type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument('--options', nargs='+', default=[], metavar='KEY=VALUE',
                        help="Inductor options of torch.compile(options=...), e.g. 'freezing=True'")
    args = parser.parse_args(argv)
    args.options = parse_compile_options(args.options)
    if args.batch < 1 or args.repeats < 1 or min(args.shape) < 32:
        raise PreflightError('--batch and --repeats must be at least 1, --shape at least 32 32')
    check_input_size(*args.shape, 'compile')
    check_threads(args.threads)
    check_backbone(args.backbone, [None])
    if args.amp == 'bf16':
        amp_dtype('cpu')
    return args


def iteration(model: torch.nn.Module, images: torch.Tensor, mode: str, amp: str) -> Callable[[], None]:
    """One inference or training iteration of ``model`` (or its compiled form) on ``images``."""
    def run() -> None:
        autocast = torch.autocast('cpu', dtype=torch.bfloat16) if amp == 'bf16' else nullcontext()
        with torch.no_grad() if mode == 'infer' else nullcontext(), autocast:
            features = model(images)
        if mode == 'train':
            sum(feature.float().square().mean() for feature in features).backward()
    return run


def seconds(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = build_backbone(args.backbone, None).train(args.mode == 'train')
    images = torch.randn(args.batch, 3, *args.shape)
    print(f'# {args.backbone}: batch {args.batch}, input {args.shape[0]}x{args.shape[1]}, {args.mode}, '
          f'amp {args.amp}, threads {torch.get_num_threads()}, torch {torch.__version__}'
          + (f', options {format_compile_options(args.options)}' if args.options else ''))
    with torch.no_grad() if args.mode == 'infer' else nullcontext():
        explanation = torch._dynamo.explain(model)(images)
    print(f'graphs {explanation.graph_count}, graph breaks {explanation.graph_break_count}')
    for reason in explanation.break_reasons:
        print(f'  break: {reason.reason}')
    torch._dynamo.reset()
    eager = iteration(model, images, args.mode, args.amp)
    compiled = iteration(torch.compile(model, options=args.options or None), images, args.mode, args.amp)
    eager()  # warm-up: oneDNN's primitives are created on first use
    eager_warm = seconds(eager)
    print(f'compile time {seconds(compiled) - eager_warm:.1f} s (first compiled iteration less an eager one)')
    times = {'eager': [], 'compiled': []}
    for _ in range(args.repeats):
        times['eager'].append(seconds(eager))
        times['compiled'].append(seconds(compiled))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f'eager {medians["eager"]:.3f} s, compiled {medians["compiled"]:.3f} s: '
          f'{medians["eager"] / medians["compiled"]:.2f}x (medians of {args.repeats})')


if __name__ == '__main__':
    run_main(main)
