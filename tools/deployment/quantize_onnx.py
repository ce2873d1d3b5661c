"""Quantise an exported graph to int8 (onnxruntime static quantisation), calibrated on real images.

Calibration images come from the config's validation set (or ``--images
DIR``), through its validation pipeline and the model's data preprocessor,
resized to a fixed-size graph's input; a two-stage graph is calibrated on
each image's RPN proposals. Conv, MatMul and Gemm weights become int8 per
channel and their inputs uint8; attention's products of two activations
and the layers producing the graph's outputs stay float (the tool prints
them and why: mmrmt/deployment/quantize.py).

    python tools/deployment/quantize_onnx.py MODEL.onnx --config CONFIG --out MODEL_int8.onnx
        [--images DIR] [--count 32] [--force] [--cfg-options KEY=VALUE ...]
"""
import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import List, Optional

from mmengine.config import DictAction

from mmrmt.utils import (PreflightError, check_dataloader_paths, check_new_file, exit_on_preflight_error,
                         read_config, replaced_atomically)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_onnx import check_graph_file  # noqa: E402


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('model', help='the float .onnx file (tools/deployment/pytorch2onnx.py)')
    parser.add_argument('--config', required=True, help='the config the graph was exported from')
    parser.add_argument('--out', required=True, help='the int8 .onnx file to write')
    parser.add_argument('--images', metavar='DIR', help="calibrate on this folder's images instead of "
                        "the config's validation set")
    parser.add_argument('--count', type=int, default=32, help='calibration images (default 32)')
    parser.add_argument('--force', action='store_true', help='replace --out if it exists')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction, help='override config settings')
    return parser.parse_args(argv)


def preflight(args: argparse.Namespace):
    """Check every input before anything is built; return the config."""
    check_graph_file(args.model)
    check_new_file(args.out, '--out', args.force, source=args.model)
    if not Path(args.out).resolve().parent.is_dir():
        raise PreflightError(f'the folder of --out does not exist: {Path(args.out).resolve().parent}')
    if args.count < 1:
        raise PreflightError(f'--count must be at least 1, got {args.count}')
    cfg = read_config(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
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
    with exit_on_preflight_error():
        cfg = preflight(args)
    from mmrmt.deployment.calibration import calibration_feeds, preprocessed_images
    from mmrmt.deployment.graph_predictor import GraphError
    from mmrmt.deployment.quantize import quantize_graph
    from mmrmt.utils.model_from_config import build_cpu_model
    model = build_cpu_model(cfg).eval()
    images = preprocessed_images(cfg, model, args.count, args.images)
    try:
        feeds = calibration_feeds(args.model, model, images)
        with tempfile.TemporaryDirectory() as workspace, replaced_atomically(args.out) as temporary:
            kept = quantize_graph(args.model, temporary, feeds, workspace)
    except GraphError as error:
        sys.exit(f'error: {error}')
    print(f'wrote {args.out} (int8, calibrated on up to {args.count} images of '
          f'{args.images or "the validation set"})')
    for reason, count in Counter(kept.values()).items():
        print(f'kept in float: {count} node(s), {reason}')


if __name__ == '__main__':
    main()
