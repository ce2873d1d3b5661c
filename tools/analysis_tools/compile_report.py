"""What torch.compile (Inductor) gives a backbone on the CPU at hand: graphs, compile time, speed.

    python tools/analysis_tools/compile_report.py --backbone rmt-t [--batch 16] [--shape 224 224]
        [--mode infer|train] [--amp none [bf16] [bf32]] [--repeats 5] [--threads N] [--options KEY=VALUE ...]
        [--impls IMPL ...] [--profile ROWS]

It prints dynamo's graph count and graph breaks for the forward (``torch._dynamo.explain``), the
compile time (the first compiled iteration less an eager one), and the median seconds of eager
and compiled iterations, interleaved one by one after a warm-up of each, with each one's peak
memory (the growth of the resident set's high-water mark over one more iteration; CUDA is not
used). ``--impls``: the backbone's implementations to compile, each against the first one's eager
run (e.g. ``--impls fast flex``: RMT's fast form, eager and compiled, and its FlexAttention form
compiled); the backbone's default one without it. ``infer``: the forward
without autograd; ``train``: forward and backward of the features' mean square. ``--amp``: the
precisions to run each in, ``none`` (float32), ``bf16`` (autocast) and ``bf32`` (float32 tensors, oneDNN's
GEMMs and convolutions in bf16: :mod:`mmrmt.amp.bf32`; an eager row only, since Inductor's cache does not
key its graphs on that setting and a compiled graph gained nothing from it, docs/benchmark.md); the last two
refused on CPUs without native bf16, as the tools' ``--amp``. ``--amp none bf16`` gives the bf16 rows'
ratios to eager float32 of the same run.
``--options``: Inductor options of ``torch.compile(options=...)``, e.g. ``freezing=True`` (weights folded
into the inference graph and prepacked for oneDNN) or ``layout_optimization=False`` (convolutions kept in
the model's memory layout); a config's training step takes them as ``compile =
dict(options=dict(layout_optimization=False))`` (mmengine passes the dict to torch.compile).
``--profile ROWS``: after the timing, one more iteration of each run under ``torch.profiler``, its ROWS
operators of most self CPU time (Inductor's generated kernels named one by one: its
``cpp.enable_kernel_profile`` option added).
"""
import argparse
import ctypes
import ctypes.util
import statistics
import time
from contextlib import nullcontext
from typing import Callable, List, Optional

import torch

from mmrmt.amp.bf32 import bf32_gemms
from mmrmt.benchmark.checks import check_backbone, check_threads
from mmrmt.benchmark.memory import peak_baseline, peak_now
from mmrmt.benchmark.models import build_backbone
from mmrmt.utils import PreflightError, check_input_size, run_main
from mmrmt.utils.amp import amp_dtype
from mmrmt.utils.compiled_inference import check_compile, format_compile_options


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--backbone', required=True, help="TYPE-ARCH, e.g. 'rmt-t', 'rest-lite'")
    parser.add_argument('--batch', type=int, default=1)
    parser.add_argument('--shape', type=int, nargs=2, default=(224, 224), metavar=('H', 'W'))
    parser.add_argument('--mode', choices=('infer', 'train'), default='infer')
    parser.add_argument('--amp', nargs='+', choices=('none', 'bf16', 'bf32'), default=['none'],
                        help="CPU precisions, each an eager and a compiled row (bf32: eager only), the first "
                        "one's eager run the reference")
    parser.add_argument('--repeats', type=int, default=5, help='timed iterations of each')
    parser.add_argument('--threads', type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument('--options', nargs='+', default=[], metavar='KEY=VALUE',
                        help="Inductor options of torch.compile(options=...), e.g. 'freezing=True'")
    parser.add_argument('--impls', nargs='+', default=[None], metavar='IMPL',
                        help="the backbone's implementations to compile, e.g. 'fast flex' (default: its default)")
    parser.add_argument('--profile', type=int, default=0, metavar='ROWS',
                        help='also print the ROWS operators of most self CPU time of each run (torch.profiler)')
    args = parser.parse_args(argv)
    args.options = check_compile(True, args.options, 'cpu', flag='--options')
    if args.profile:
        args.options['cpp.enable_kernel_profile'] = True
    if args.batch < 1 or args.repeats < 1 or min(args.shape) < 32 or args.profile < 0:
        raise PreflightError('--batch and --repeats must be at least 1, --shape at least 32 32, --profile at least 0')
    check_input_size(*args.shape, 'compile')
    check_threads(args.threads)
    check_backbone(args.backbone, args.impls)
    if {'bf16', 'bf32'}.intersection(args.amp):
        amp_dtype('cpu')
    return args


def iteration(model: torch.nn.Module, images: torch.Tensor, mode: str, amp: str) -> Callable[[], None]:
    """One inference or training iteration of ``model`` (or its compiled form) on ``images``."""
    def run() -> None:
        autocast = torch.autocast('cpu', dtype=torch.bfloat16) if amp == 'bf16' else nullcontext()
        with bf32_gemms() if amp == 'bf32' else nullcontext():
            with torch.no_grad() if mode == 'infer' else nullcontext(), autocast:
                features = model(images)
            if mode == 'train':
                sum(feature.float().square().mean() for feature in features).backward()
    return run


def seconds(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def peak_mib(run: Callable[[], None]) -> float:
    """How far one call of ``run`` lifts the process's resident-set high-water mark, in MiB: the heap's
    free memory handed back to the system first (glibc's ``malloc_trim``), so that what earlier runs
    freed does not hide this one's peak."""
    ctypes.CDLL(ctypes.util.find_library('c')).malloc_trim(0)
    baseline = peak_baseline('cpu')
    run()
    return max(0, peak_now('cpu') - baseline) / 2**20


def print_profile(name: str, run: Callable[[], None], rows: int) -> None:
    """The ``rows`` operators of most self CPU time in one call of ``run``."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        run()
    print(f'## {name}: one iteration under torch.profiler')
    print(profile.key_averages().table(sort_by='self_cpu_time_total', row_limit=rows, max_name_column_width=60))


def label(kind: str, impl: Optional[str], amp: str, amps: List[str]) -> str:
    """'eager' or 'compiled', with the implementation where one is named and the autocast dtype where
    several are compared."""
    return ' '.join([kind] + ([] if impl is None else [impl]) + ([amp] if len(amps) > 1 else []))


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f'# {args.backbone}: batch {args.batch}, input {args.shape[0]}x{args.shape[1]}, {args.mode}, '
          f'amp {" ".join(args.amp)}, threads {torch.get_num_threads()}, torch {torch.__version__}'
          + (f', options {format_compile_options(args.options)}' if args.options else '')
          + (f', impls {" ".join(args.impls)}' if args.impls != [None] else ''))
    images = torch.randn(args.batch, 3, *args.shape, generator=torch.Generator().manual_seed(0))
    runs, eager_seconds = {}, {}
    for impl in args.impls:
        torch.manual_seed(0)
        model = build_backbone(args.backbone, impl).train(args.mode == 'train')
        with torch.no_grad() if args.mode == 'infer' else nullcontext():
            explanation = torch._dynamo.explain(model)(images)
        print(f'{label("graphs", impl, "", [])} {explanation.graph_count}, '
              f'graph breaks {explanation.graph_break_count}')
        for reason in explanation.break_reasons:
            print(f'  break: {reason.reason}')
        torch._dynamo.reset()
        compiled = torch.compile(model, options=args.options or None)
        for amp in args.amp:
            if impl == args.impls[0]:
                eager = runs[label('eager', impl, amp, args.amp)] = iteration(model, images, args.mode, amp)
                eager()  # warm-up: oneDNN's primitives are created on first use
                eager_seconds[amp] = seconds(eager)
            if amp == 'bf32':
                continue
            name = label('compiled', impl, amp, args.amp)
            runs[name] = iteration(compiled, images, args.mode, amp)
            print(f'{name}: compile time {seconds(runs[name]) - eager_seconds[amp]:.1f} s '
                  '(first compiled iteration less an eager one)')
    eager_name = next(iter(runs))
    times = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, run in runs.items():
            times[name].append(seconds(run))
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, run in runs.items():
        ratio = '' if name == eager_name else f': {medians[eager_name] / medians[name]:.2f}x {eager_name}'
        print(f'{name} {medians[name]:.3f} s, peak +{peak_mib(run):.0f} MiB{ratio} (median of {args.repeats})')
    for name, run in runs.items() if args.profile else ():
        print_profile(name, run, args.profile)


if __name__ == '__main__':
    run_main(main)
