"""Predict on your own images with a detection or segmentation config of mmrmt.

    python demo/image_demo.py INPUTS CONFIG [--weights CKPT] [--out-dir DIR]
                              [--device cpu] [--pred-score-thr 0.3] [--batch-size 1]
                              [--palette none] [--picture-scale 1] [--amp [bf32]] [--force]
                              [--compile [--compile-options KEY=VALUE ...]]

INPUTS is an image, a folder (its images) or a quoted glob pattern ('photos/**/*.jpg'); for each image it writes
``DIR/vis/<image name>`` (the predictions painted) and ``DIR/preds/<image stem>.json``. An undecodable image is
one line and skipped (exit status 1 at the end); an image too large, or one the test scale shrinks to nothing,
stops the run before the model is built; outputs are never replaced without ``--force``, inputs never. The
options: docs/get_started.md. ``--amp bf32`` (CPU): float32 tensors whose oneDNN GEMMs and convolutions multiply
in bf16 (:mod:`mmrmt.amp.bf32`). ``--compile``: the backbone and neck compiled by torch.compile (Inductor) for
inference, weights frozen, the code cached for the next run; the compile time said once the images are done
(:mod:`mmrmt.utils.compiled_inference`).
"""
import argparse
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import torch
from torch import nn

from mmrmt.amp import float32_cpu_kernels
from mmrmt.amp.bf32 import bf32_gemms
from mmrmt.apis import (build_inferencer, check_image_bounds, check_test_scale, collect_images, output_files,
                        predict_images, read_image_sizes)
from mmrmt.utils import PreflightError, check_device, check_writable, read_config, read_run_checkpoint, run_main
from mmrmt.utils.amp import add_amp_argument, amp_dtype, check_amp
from mmrmt.utils.compiled_inference import add_compile_arguments, check_compile, compile_features


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('inputs', help='an image, a folder of images or a (quoted) glob pattern')
    parser.add_argument('config', help='detection or segmentation config file')
    parser.add_argument('--weights', help='checkpoint of the whole model (else random weights)')
    parser.add_argument('--out-dir', default='outputs', help='folder receiving vis/ and preds/')
    parser.add_argument('--device', default=None, help="'cpu', 'cuda', 'cuda:1'... (default: "
                        'CUDA when available)')
    parser.add_argument('--pred-score-thr', type=float, default=0.3,
                        help='lowest score of a painted detection (the JSON keeps all)')
    parser.add_argument('--batch-size', type=int, default=1, help='images a forward pass')
    parser.add_argument('--palette', default='none',
                        help="colours: 'none' (the checkpoint's or config's), 'random', or a dataset "
                        "name (mmdet: coco, voc, citys; mmseg: ade20k, cityscapes, ...)")
    parser.add_argument('--picture-scale', type=int, default=1,
                        help='paint on the image enlarged this many times (legible labels on '
                        'small images)')
    add_amp_argument(parser)
    parser.add_argument('--force', action='store_true', help='replace existing output files')
    add_compile_arguments(parser)
    return parser.parse_args(argv)


@contextmanager
def amp_autocast(model: nn.Module, device_type: str, amp: Optional[str]) -> Iterator[nn.Module]:
    """Run ``model`` within the block in ``--amp``'s precision on ``device_type`` (none for None): autocast in
    :func:`~mmrmt.utils.amp.amp_dtype`, its float32-only CPU kernels in float32; or, for 'bf32', oneDNN's GEMMs
    in bf16."""
    if amp is None:
        yield model
    elif amp == 'bf32':
        with bf32_gemms():
            yield model
    else:
        with torch.autocast(device_type, dtype=amp_dtype(device_type)), float32_cpu_kernels(model):
            yield model


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    if args.batch_size < 1 or args.picture_scale < 1:
        raise PreflightError('--batch-size and --picture-scale must be at least 1')
    if not 0 <= args.pred_score_thr <= 1:  # also false for nan
        raise PreflightError(f'--pred-score-thr is a score between 0 and 1, got {args.pred_score_thr}')
    check_device(args.device)
    device_type = torch.device(args.device or ('cuda' if torch.cuda.is_available() else 'cpu')).type
    check_amp(args.amp, device_type, args.compile)
    compile_options = check_compile(args.compile, args.compile_options, device_type)
    cfg = read_config(args.config)
    if args.weights:
        read_run_checkpoint(args.weights, '--weights')
    images = collect_images(args.inputs)
    check_image_bounds(images, args.picture_scale)
    sizes, problems = read_image_sizes(images)
    check_test_scale(cfg, sizes)
    readable = list(sizes)
    for folder in (args.out_dir, Path(args.out_dir) / 'vis', Path(args.out_dir) / 'preds'):
        check_writable(str(folder), '--out-dir', is_dir=True)
    outputs = output_files(readable, Path(args.out_dir), args.force)
    for image, problem in problems.items():
        print(f'error: {image} {problem}; skipped', file=sys.stderr)
    if not readable:
        raise PreflightError(f'none of the {len(images)} images of {args.inputs} can be read')
    inferencer = build_inferencer(cfg, args.weights, args.device, args.palette)
    compiled = compile_features(inferencer.model, compile_options) if compile_options is not None else None
    with amp_autocast(inferencer.model, device_type, args.amp):
        predict_images(inferencer, outputs, args.pred_score_thr, args.batch_size, args.picture_scale)
    if compiled is not None:
        print(compiled.summary())
    print(f'{len(readable)} pictures in {Path(args.out_dir) / "vis"}, predictions in '
          f'{Path(args.out_dir) / "preds"}')
    if problems:
        raise PreflightError(f'{len(problems)} of {len(images)} images could not be read (listed above)')


if __name__ == '__main__':
    run_main(main)
