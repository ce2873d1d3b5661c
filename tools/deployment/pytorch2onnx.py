"""Export a config's model (or its backbone) to ONNX, and check it in onnxruntime or OpenVINO.

The graph is the model's tensor mode (mmdet's ``_forward``, mmseg's
``forward(mode='tensor')``): backbone, neck and heads, without box decoding
or NMS (see docs/deployment.md for the inputs and outputs of each kind of
model). Needs the ``deploy`` extra: ``pip install -e ".[deploy]"``; ``--verify
--runtime openvino`` the ``openvino`` extra.

Examples::

    python tools/deployment/pytorch2onnx.py configs/rmt/retinanet_rmt-t_fpn_1x_coco.py \\
        --weights retinanet_rmt-t.pth --shape 800 1216 --dynamic --out retinanet_rmt-t.onnx --verify
    python tools/deployment/pytorch2onnx.py configs/rmt/upernet_rmt-t_8xb2-160k_ade20k-512x512.py \\
        --shape 512 512 --backbone-only --exporter dynamo --out rmt-t.onnx
    python tools/deployment/pytorch2onnx.py configs/rmt/retinanet_rmt-t_fpn_1x_coco.py \
        --shape 800 1216 --out retinanet_rmt-t.onnx --verify --runtime openvino
"""
import argparse
import os.path as osp
from typing import List, Optional, Tuple

import torch
from mmengine.config import Config

from mmrmt.checkpoint import load_model_weights
from mmrmt.deployment.export import (EXPORTERS, MIN_DYNAMIC_SIZE, DynamicExportError, TensorModeModel, check_opset,
                                     exact_roi_min_side, export_onnx)
from mmrmt.deployment.runtime import (add_runtime_arguments, check_runtime, compare_with_runtime, runtime_label,
                                      verification_inputs)
from mmrmt.utils import (INIT_SEED, PreflightError, add_cfg_options, apply_cfg_options, build_cpu_model,
                         build_seeded_model, check_installed, check_new_file, read_config, read_run_checkpoint,
                         run_main)
from mmrmt.utils.model_kind import config_scope

#: --verify's default bound on |difference| / max|value| per --precision (why: --tolerance's help): one threshold
#: for every model and CPU, not a rounding bound of one model (the tests derive theirs from float64 per model:
#: tests/helpers/runtime_bounds.py).
DEFAULT_TOLERANCE = {'f32': 1e-4, 'bf16': 5e-2}


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='config file')
    parser.add_argument('--weights', help='checkpoint to load (default: initialised weights, no '
                        f'pretrained backbone, drawn from seed {INIT_SEED}: the same in every export of a config)')
    parser.add_argument('--shape', type=int, nargs=2, required=True, metavar=('H', 'W'),
                        help='input size the graph is traced at')
    parser.add_argument('--batch', type=int,
                        help='images per call of a fixed-size graph (default 1; two-stage detectors: 1)')
    parser.add_argument('--dynamic', action='store_true',
                        help=f'accept any batch and any image size >= {MIN_DYNAMIC_SIZE} (two-stage '
                             'detectors: one image, any number of proposals)')
    parser.add_argument('--images-per-run', type=int, metavar='N',
                        help='a fixed-size graph of --batch images computes them N at a time (an ONNX Scan; '
                             'N must divide --batch): peak memory of N images, in any runtime. '
                             'Default: the whole batch at once')
    parser.add_argument('--exporter', choices=sorted(EXPORTERS), default='torchscript',
                        help="'torchscript' (torch.onnx.export dynamo=False, as mmdeploy) or 'dynamo'")
    parser.add_argument('--opset', type=int, help='ONNX opset: 11 to 20 torchscript (default 17), 18 to 20 '
                        'dynamo (default 18)')
    parser.add_argument('--out', required=True, help='the .onnx file to write')
    parser.add_argument('--verify', action='store_true',
                        help='run the file in --runtime on random and demo images and compare with torch')
    add_runtime_arguments(parser, what='--verify in')
    parser.add_argument('--tolerance', type=float,
                        help='--verify fails above this |difference| / max|value| (default 1e-4, 1,678 float32 '
                             'roundings (2^-24) of the largest value, far above a float32 graph\'s rounding in '
                             'another order and below a wrong op (>= 1e-2); with --precision bf16 5e-2: 2^-8 a '
                             'layer over ~100 layers)')
    parser.add_argument('--backbone-only', action='store_true', help='export the backbone alone')
    parser.add_argument('--force', action='store_true', help='overwrite --out if it exists')
    add_cfg_options(parser, example='model.backbone.impl=reference')
    return parser.parse_args(argv)


def preflight(args: argparse.Namespace) -> Config:
    """Check every input before anything is built (``args.checkpoint``: ``--weights`` as read); return the config."""
    cfg = apply_cfg_options(read_config(args.config), args.cfg_options)
    check_new_file(args.out, '--out', args.force, inputs=[('--weights', args.weights), ('the config', args.config)])
    if not osp.isdir(osp.dirname(osp.abspath(args.out))):
        raise PreflightError(f'the folder of --out does not exist: {osp.dirname(osp.abspath(args.out))}')
    args.checkpoint = None if args.weights is None else read_run_checkpoint(args.weights, '--weights',
                                                                            remote_ok=False)
    low = MIN_DYNAMIC_SIZE if args.dynamic else 1
    if min(args.shape) < low:
        raise PreflightError(f'--shape must be at least {low} (H W){" with --dynamic" * args.dynamic}, '
                             f'got {args.shape[0]} {args.shape[1]}')
    if args.batch is not None and (args.dynamic or args.batch < 1):
        raise PreflightError(f'--batch sets the batch of a fixed-size graph: give a positive --batch or '
                             f'--dynamic (any batch), got --batch {args.batch}{" --dynamic" * args.dynamic}')
    if args.images_per_run is not None:
        batch = args.batch or 1
        if args.dynamic or args.images_per_run < 1 or batch % args.images_per_run:
            raise PreflightError(f'--images-per-run splits the --batch of a fixed-size graph: give a positive '
                                 f'divisor of --batch {batch}, got --images-per-run {args.images_per_run}'
                                 f'{" with --dynamic (a dynamic graph runs in image chunks already)" * args.dynamic}')
    try:
        check_opset(args.exporter, args.opset)
    except ValueError as error:
        raise PreflightError(str(error)) from None
    check_installed(['onnx', *(['onnxscript'] if args.exporter == 'dynamo' else [])])
    if args.verify:
        check_runtime(args.runtime, args.precision)
    elif (args.runtime, args.precision) != ('onnxruntime', 'f32'):
        raise PreflightError('--runtime and --precision choose where --verify runs the file: add --verify')
    config_scope(cfg, args.config)
    if not isinstance(cfg.get('model'), dict):
        raise PreflightError(f'{args.config} has no model = dict(type=...) setting')
    return cfg


def build_model(cfg: Config, checkpoint: Optional[dict], weights: str = '--weights') -> torch.nn.Module:
    """The config's model on the CPU in eval mode, with ``checkpoint`` (read from the file ``weights``) loaded
    strictly; without it, initialised as a training run starts but for the backbone's pretrained file, from seed
    :data:`INIT_SEED` (two exports of one config hold the same weights, so that their outputs compare)."""
    cfg.model.backbone.pop('init_cfg', None)
    if checkpoint is None:
        return build_seeded_model(cfg)
    model = build_cpu_model(cfg)
    try:
        load_model_weights(model, checkpoint, weights)
    except ValueError as error:
        raise PreflightError(f'--weights {error}') from error
    return model.eval()


def verification_sizes(shape: Tuple[int, int], dynamic: bool) -> List[Tuple[int, int]]:
    """The traced size and, for a dynamic graph, a larger and an odd one (not a multiple of 32)."""
    height, width = shape
    if not dynamic:
        return [(height, width)]
    return [(height, width), (height + 64, width + 32), (height + 13, width + 27)]


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    cfg = preflight(args)
    try:
        model = TensorModeModel(build_model(cfg, args.checkpoint, args.weights), args.backbone_only)
    except ValueError as error:  # a model without a tensor mode the export supports
        raise PreflightError(str(error)) from error
    if args.dynamic and not model.size_is_dynamic:
        raise PreflightError('a Cascade R-CNN graph exports at a fixed size only (its stages clip the '
                             'refined boxes to the traced image size); drop --dynamic and export one file per size')
    if args.batch not in (None, 1) and not model.batch_is_dynamic:
        raise PreflightError(f'a {model.kind.replace("_", "-")} detector graph takes one image; '
                             f'drop --batch {args.batch}')
    batch = 2 if args.dynamic and model.batch_is_dynamic else (args.batch or 1)
    inputs = model.example_inputs(*args.shape, batch, torch.Generator().manual_seed(0))
    opset = check_opset(args.exporter, args.opset)
    try:
        export_onnx(model, inputs, args.out, args.exporter, opset, args.dynamic, args.images_per_run)
    except DynamicExportError as error:  # raised before anything is written
        raise PreflightError(str(error)) from None
    size = osp.getsize(args.out) / 2**20
    print(f'wrote {args.out} ({size:.1f} MiB, {args.exporter} exporter, opset {opset}, '
          f'{"dynamic" if args.dynamic else "fixed"} {model.kind} graph, inputs {model.input_names})')
    exact_side = exact_roi_min_side(model.model, opset)
    if exact_side:
        print(f'note: ONNX RoiAlign before opset 16 stretches RoIs thinner than one feature pixel to one pixel: '
              f'this graph pools as torch RoIs of sides >= {exact_side:g} px (--verify checks those); '
              'export with --opset 16 or higher for every RoI')
    if args.verify:
        differences = compare_with_runtime(
            model, args.out, verification_inputs(model, verification_sizes(args.shape, args.dynamic), batch,
                                                 picture_batch=1 if args.dynamic else batch,
                                                 min_proposal_side=max(1.0, exact_side)),
            args.runtime, args.precision)
        label = runtime_label(args.runtime, args.precision)
        for description, difference in differences.items():
            print(f'{label} vs torch, max |difference| / max |value|: {difference:.2e} ({description})')
        worst = max(differences.values())
        tolerance = DEFAULT_TOLERANCE[args.precision] if args.tolerance is None else args.tolerance
        if worst > tolerance:
            raise PreflightError(f'{label} differs from torch by {worst:.2e} of the largest value, '
                                 f'more than --tolerance {tolerance:g}')


if __name__ == '__main__':
    run_main(main)
