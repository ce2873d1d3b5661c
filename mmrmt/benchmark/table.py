"""What the benchmark prints: how a file runs the batch, and the Markdown table of the contenders."""
import argparse
from typing import Dict, Tuple

import torch

from mmrmt.deployment.runtime import ImageChunks, onnx_graph, relative_difference
from .contenders import baseline_label
from .workers import Result


def graph_batches(path: str, batch: int, shape: Tuple[int, int]) -> str:
    """How an --onnx file runs the benchmark's batch: some images a run, or the whole batch."""
    images = ImageChunks(onnx_graph(path)).images_per_run((3, *shape))
    if images is None:
        return 'the whole batch a run (a fixed batch, or not one image an output row)'
    return f'{min(images, batch)} of the {batch} images a run (a dynamic batch, in chunks as eager)'


def format_table(args: argparse.Namespace, results: Dict[str, Dict[str, Result]]) -> str:
    """The Markdown table: one row a contender and mode; with --onnx or --compile also each one's output error,
    against the torch model's float32 outputs (the baseline row: the model the config or --backbone names),
    '-' where the iterations return none (training, a config's predict)."""
    label = baseline_label(args)
    with_errors = bool(args.onnx or args.compile)
    error_column = f' error vs {label} |' if with_errors else ''
    lines = ['| impl | mode | median s | img/s | peak MB | speed-up vs ' f'{label} | memory vs {label} | '
             'process peak MB |' + error_column, '|---|---|---|---|---|---|---|---|' + '---|' * with_errors]
    for mode, per_impl in results.items():
        base_time, base_peak, _, reference = per_impl[label]
        for impl, (seconds, peak, process_peak, outputs) in per_impl.items():
            error = f' {output_error(reference, outputs)} |' if with_errors else ''
            lines.append(f'| {impl} | {mode} | {seconds:.3f} | {args.batch / seconds:.2f} | '
                         f'{peak / 2**20:.0f} | {base_time / seconds:.2f}x | '
                         f'{peak / base_peak if base_peak > 0 else float("nan"):.2f}x | '
                         f'{process_peak / 2**20:.0f} |' + error)
    return '\n'.join(lines)


def output_error(expected: list, actual: list) -> str:
    """max |actual - expected| / max |expected| over the outputs (:func:`relative_difference`),
    'other shapes' for outputs of another number or shape (a graph of another variant), '-' where either
    iteration returned none."""
    if expected is None or actual is None:
        return '-'
    try:
        return f'{relative_difference([torch.from_numpy(array) for array in expected], actual):.1e}'
    except ValueError:
        return 'other shapes'
