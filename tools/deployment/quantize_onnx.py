"""Quantise an exported graph to int8 (onnxruntime static quantisation), calibrated on real images.

Calibration images come from the config's validation set (or ``--images
DIR``), through its validation pipeline and the model's data preprocessor,
resized to a fixed-size graph's input; a two-stage graph is calibrated on
each image's RPN proposals. Conv, MatMul and Gemm weights become int8 per
channel and their inputs uint8; attention's products of two activations,
products by constant permutations and the layers producing the graph's
outputs stay float (the tool prints them and why: mmrmt/deployment/int8/quantize.py).

The int8 file (QDQ) runs in onnxruntime and in OpenVINO (test_onnx.py and
benchmark.py --runtime openvino).

    python tools/deployment/quantize_onnx.py MODEL.onnx --config CONFIG --out MODEL_int8.onnx
        [--images DIR] [--count 32] [--force] [--cfg-options KEY=VALUE ...]
"""
import argparse
import tempfile
from collections import Counter
from pathlib import Path
from typing import List, Optional, Tuple

from mmengine.config import Config

from mmrmt.atomic_file import replaced_atomically
from mmrmt.utils import (PreflightError, add_cfg_options, apply_cfg_options, build_cpu_model, check_data_paths,
                         check_graph_file, check_new_file, file_errors_as_tool_errors, read_config, run_main)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('model', help='the float .onnx file (tools/deployment/pytorch2onnx.py)')
    parser.add_argument('--config', required=True, help='the config the graph was exported from')
    parser.add_argument('--out', required=True, help='the int8 .onnx file to write')
    parser.add_argument('--images', metavar='DIR', help="calibrate on this folder's images instead of "
                        "the config's validation set")
    parser.add_argument('--count', type=int, default=32, help='calibration images (default 32)')
    parser.add_argument('--force', action='store_true', help='replace --out if it exists')
    add_cfg_options(parser, example='val_dataloader.dataset.data_root=data/coco/')
    return parser.parse_args(argv)


def preflight(args: argparse.Namespace) -> Tuple[Config, Optional[List[str]]]:
    """Check every input before anything is built; return the config and the calibration
    images of ``--images`` (None: the validation set's)."""
    check_graph_file(args.model)
    check_new_file(args.out, '--out', args.force, inputs=[('the model', args.model), ('the config', args.config),
                                                          ('--images', args.images)])
    if not Path(args.out).resolve().parent.is_dir():
        raise PreflightError(f'the folder of --out does not exist: {Path(args.out).resolve().parent}')
    if args.count < 1:
        raise PreflightError(f'--count must be at least 1, got {args.count}')
    cfg = apply_cfg_options(read_config(args.config), args.cfg_options)
    if args.images is None:
        check_data_paths(cfg, ['val_dataloader'])
        return cfg, None
    from mmrmt.deployment.int8 import usable_images
    if not Path(args.images).is_dir():
        raise PreflightError(f'--images folder not found: {args.images}')
    with file_errors_as_tool_errors():
        return cfg, usable_images(args.images, args.count)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    cfg, paths = preflight(args)
    from mmrmt.deployment.int8 import calibration_feeds, preprocessed_images, quantize_graph
    from mmrmt.deployment.runtime import GraphError
    model = build_cpu_model(cfg).eval()
    images = preprocessed_images(cfg, model, args.count, paths)
    try:
        feeds = calibration_feeds(args.model, model, images)
        with tempfile.TemporaryDirectory() as workspace, replaced_atomically(args.out) as temporary:
            kept = quantize_graph(args.model, temporary, feeds, workspace)
    except GraphError as error:
        raise PreflightError(str(error)) from None
    print(f'wrote {args.out} (int8, calibrated on up to {args.count} images of '
          f'{args.images or "the validation set"})')
    for reason, count in Counter(kept.values()).items():
        print(f'kept in float: {count} node(s), {reason}')


if __name__ == '__main__':
    run_main(main)
