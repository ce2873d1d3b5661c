"""Profile an ONNX file in onnxruntime (the session options every mmrmt tool uses): time per op type.

Runs the file on random inputs of its input shapes (``--shape`` / ``--batch``
fill dynamic dimensions), one warm-up run then ``--runs`` profiled ones, and
prints the kernel time of each operator type per run, slowest first.

    python tools/deployment/profile_onnx.py rmt-t_b16.onnx [--runs 3] [--threads 2] [--top 15]
"""
import argparse
import os
import tempfile
from typing import List, Optional

import torch

from mmrmt.utils import PreflightError, check_graph_file, run_main


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('model', help='the .onnx file')
    parser.add_argument('--runs', type=int, default=3, help='profiled runs (default 3)')
    parser.add_argument('--threads', type=int, help="onnxruntime's threads (default: torch's)")
    parser.add_argument('--top', type=int, default=15, help='op types listed (default 15)')
    parser.add_argument('--batch', type=int, default=1, help='batch of a dynamic graph (default 1)')
    parser.add_argument('--shape', type=int, nargs=2, default=(224, 224), metavar=('H', 'W'),
                        help='image size of a dynamic graph (default 224 224)')
    return parser.parse_args(argv)


def random_feeds(session, batch: int, shape) -> dict:
    """Normal images (and 1000 proposals inside them for a two-stage graph)."""
    from mmrmt.deployment.export import random_proposals
    image_spec = session.get_inputs()[0]
    dims = [size if isinstance(size, int) else default
            for size, default in zip(image_spec.shape, (batch, 3, *shape))]
    feeds = {image_spec.name: torch.randn(*dims).numpy()}
    if len(session.get_inputs()) == 2:
        feeds[session.get_inputs()[1].name] = random_proposals(1000, dims[2], dims[3]).numpy()
    return feeds


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    check_graph_file(args.model)
    if min(args.runs, args.top, args.batch, *args.shape) < 1:
        raise PreflightError('--runs, --top, --batch and --shape must be at least 1')
    from mmrmt.deployment.runtime import format_profile, onnxruntime_session, time_per_op_type
    feeds = random_feeds(onnxruntime_session(args.model, args.threads), args.batch, args.shape)
    with tempfile.TemporaryDirectory() as folder:
        session = onnxruntime_session(args.model, args.threads, os.path.join(folder, 'profile'))
        for _ in range(1 + args.runs):  # the first run warms up, and is left out
            session.run(None, feeds)
        rows = time_per_op_type(session.end_profiling(), skip_runs=1)
    print(f'# {args.model}: onnxruntime kernel time per op type, {args.runs} runs, threads '
          f'{args.threads or torch.get_num_threads()}')
    print(format_profile(rows, args.runs, args.top))


if __name__ == '__main__':
    run_main(main)
