"""Quantise an exported graph to int8 for onnxruntime or OpenVINO, calibrated on real images.

Calibration images come from the config's validation set (or ``--images
DIR``), through its validation pipeline and the model's data preprocessor,
resized to a fixed-size graph's input; a two-stage graph is calibrated on
each image's RPN proposals. Conv, MatMul and Gemm weights become int8 per
channel and their inputs 8-bit; attention's products of two activations,
products by constant permutations and the layers producing the graph's
outputs stay float (the tool prints them and why: mmrmt/deployment/quantize.py).

--runtime onnxruntime (default): onnxruntime's static quantiser, for
onnxruntime. --runtime openvino: OpenVINO's own quantiser, nncf
(mmrmt/deployment/quantize_openvino.py), for OpenVINO; the same
calibration images and float nodes. Either writes an int8 ONNX file (QDQ).

    python tools/deployment/quantize_onnx.py MODEL.onnx --config CONFIG --out MODEL_int8.onnx
        [--runtime onnxruntime|openvino] [--images DIR] [--count 32] [--force] [--cfg-options KEY=VALUE ...]
"""
import argparse
import importlib.util
import tempfile
from collections import Counter
from pathlib import Path
from typing import List, Optional

from mmrmt.deployment.runtimes import RUNTIMES, check_runtime
from mmrmt.utils import (PreflightError, add_cfg_options, apply_cfg_options, build_cpu_model,
                         check_dataloader_paths, check_graph_file, check_new_file, read_config,
                         replaced_atomically, run_main)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('model', help='the float .onnx file (tools/deployment/pytorch2onnx.py)')
    parser.add_argument('--config', required=True, help='the config the graph was exported from')
    parser.add_argument('--out', required=True, help='the int8 .onnx file to write')
    parser.add_argument('--images', metavar='DIR', help="calibrate on this folder's images instead of "
                        "the config's validation set")
    parser.add_argument('--count', type=int, default=32, help='calibration images (default 32)')
    parser.add_argument('--runtime', choices=RUNTIMES, default='onnxruntime',
                        help="the runtime to quantise for, with its own quantiser: onnxruntime's (default) "
                             'or nncf for OpenVINO (the openvino extra)')
    parser.add_argument('--force', action='store_true', help='replace --out if it exists')
    add_cfg_options(parser, example='val_dataloader.dataset.data_root=data/coco/')
    return parser.parse_args(argv)


def preflight(args: argparse.Namespace):
    """Check every input before anything is built; return the config."""
    check_graph_file(args.model)
    check_runtime(args.runtime)
    if args.runtime == 'openvino' and importlib.util.find_spec('nncf') is None:
        raise PreflightError('nncf is not installed; install the openvino extra: pip install -e ".[openvino]"')
    check_new_file(args.out, '--out', args.force, source=args.model)
    if not Path(args.out).resolve().parent.is_dir():
        raise PreflightError(f'the folder of --out does not exist: {Path(args.out).resolve().parent}')
    if args.count < 1:
        raise PreflightError(f'--count must be at least 1, got {args.count}')
    cfg = apply_cfg_options(read_config(args.config), args.cfg_options)
    if args.images is None:
        check_dataloader_paths(cfg, ['val_dataloader'])
    else:
        from mmrmt.deployment.calibration import folder_images
        if not Path(args.images).is_dir():
            raise PreflightError(f'--images folder not found: {args.images}')
        if not folder_images(args.images):
            raise PreflightError(f'--images {args.images} holds no .jpg, .jpeg, .png or .bmp file')
    return cfg


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    cfg = preflight(args)
    from mmrmt.deployment.calibration import calibration_feeds, preprocessed_images
    from mmrmt.deployment.graph_predictor import GraphError
    if args.runtime == 'openvino':
        from mmrmt.deployment.quantize_openvino import quantize_for_openvino as quantize
    else:
        from mmrmt.deployment.quantize import quantize_graph as quantize
    model = build_cpu_model(cfg).eval()
    images = preprocessed_images(cfg, model, args.count, args.images)
    try:
        feeds = calibration_feeds(args.model, model, images)
        with tempfile.TemporaryDirectory() as workspace, replaced_atomically(args.out) as temporary:
            kept = quantize(args.model, temporary, feeds, workspace)
    except GraphError as error:
        raise PreflightError(str(error)) from None
    quantiser = 'nncf, for OpenVINO' if args.runtime == 'openvino' else 'onnxruntime'
    print(f'wrote {args.out} (int8 by {quantiser}, calibrated on up to {args.count} images of '
          f'{args.images or "the validation set"})')
    for reason, count in Counter(kept.values()).items():
        print(f'kept in float: {count} node(s), {reason}')


if __name__ == '__main__':
    run_main(main)
