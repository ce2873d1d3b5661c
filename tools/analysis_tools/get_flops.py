"""Parameters and FLOPs of a config's model (or of its backbone) at one input size.

FLOPs are counted by tracing one forward pass with mmengine's fvcore-style
counter: one multiply-add is one FLOP, and the matrix products of attention
(``scaled_dot_product_attention`` included) and token mixing count; norms,
activations and element-wise ops do not. The part in products of two
activations is reported too: mmcv's older hook-based counter, with which
the papers report FLOPs, leaves it out. Detectors run their ``tensor``
forward on one image of the given size, through the RPN's test-time
proposals for two-stage models (mask heads on the first 100), as mmdet's
own tool does; segmentors run their decode head. The model is built on the
CPU with plain BN in place of SyncBN, and without loading checkpoints; our
backbones' fast classes record their graph forms while traced (plain ops
only, see ``mmrmt.models.layers.run_mode.records_graph``).

Examples::

    python tools/analysis_tools/get_flops.py configs/rmt/mask-rcnn_rmt-t_fpn_1x_coco.py --shape 800 1280
    python tools/analysis_tools/get_flops.py configs/rmt/upernet_rmt-s_8xb2-160k_ade20k-512x512.py \\
        --shape 512 2048
    python tools/analysis_tools/get_flops.py configs/rmt/retinanet_rmt-t_fpn_1x_coco.py --shape 224 \\
        --backbone-only
"""
import argparse
from functools import partial
from math import prod
from typing import Any, List, Optional, Sequence, Tuple

import torch
from mmengine.analysis import FlopAnalyzer, parameter_count
from mmengine.analysis.jit_handles import get_shape
from mmengine.analysis.print_helper import complexity_stats_table
from mmengine.config import Config
from torch import nn

from mmrmt.utils import (PreflightError, add_cfg_options, apply_cfg_options, build_cpu_model, check_input_size,
                         read_config, run_main)
from mmrmt.utils.model_kind import model_kind


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config', help='config file')
    parser.add_argument('--shape', type=int, nargs='+', default=[800, 1280],
                        help="input size: H W, or one value for a square (default: 800 1280, the papers' "
                        'COCO test size, 1280 wide)')
    parser.add_argument('--backbone-only', action='store_true', help='count the backbone alone')
    parser.add_argument('--show-table', action='store_true', help='print the per-module table')
    add_cfg_options(parser, example='model.backbone.arch=s')
    args = parser.parse_args(argv)
    if len(args.shape) not in (1, 2) or min(args.shape) < 1:
        raise PreflightError(f'--shape takes H W or one size, each >= 1, got {" ".join(map(str, args.shape))}')
    return args


#: Operators multiplying two activations (attention); mmcv's older
#: hook-based counter, with which many papers report FLOPs, leaves them out.
ACTIVATION_PRODUCTS = ('matmul', 'bmm', 'einsum', 'scaled_dot_product_attention')


def attention_flops(inputs: List[Any], outputs: List[Any]) -> int:
    """FLOPs of ``aten::scaled_dot_product_attention``: q @ k^T and attn @ v.

    q is (..., L, E), k (..., S, E), v (..., S, Ev): L * S * (E + Ev)
    multiply-adds for each leading index (batch, heads).
    """
    query, key, value = (get_shape(value) for value in inputs[:3])
    *leading, length, dims = query
    return prod(leading) * length * key[-2] * (dims + value[-1])


def cascade_roi_tensor_forward(roi_head: nn.Module, x: Tuple[torch.Tensor, ...], rpn_results_list: list,
                               batch_data_samples: list) -> tuple:
    """A cascade RoI head's raw outputs with masks for the first 100 proposals.

    mmdet 3's ``CascadeRoIHead.forward`` runs every stage's mask head on all
    (1000) proposals; its ``StandardRoIHead.forward`` and mmdet 2.x's
    ``forward_dummy`` of both heads, with which the papers counted, on the
    first 100 — the number of detections kept at test time.
    """
    from mmdet.structures.bbox import bbox2roi
    rois = bbox2roi([result.bboxes for result in rpn_results_list])
    outs = ()
    for stage in range(roi_head.num_stages):
        bbox_results = roi_head._bbox_forward(stage, x, rois)
        outs += (bbox_results['cls_score'], bbox_results['bbox_pred'])
    if roi_head.with_mask:
        for stage in range(roi_head.num_stages):
            outs += (roi_head._mask_forward(stage, x, rois[:100])['mask_preds'], )
    return outs


def tensor_forward(model: nn.Module, height: int, width: int) -> nn.Module:
    """The model's ``tensor`` forward for one (height, width) image as a one-input module.

    Detectors need per-image meta information for their proposals; the
    sample built here describes an unpadded, unscaled image.
    """
    if model_kind(model) in ('two_stage', 'single_stage'):  # the detectors
        from mmdet.structures import DetDataSample
        shape = (height, width)
        sample = DetDataSample(metainfo=dict(img_shape=shape, ori_shape=shape, pad_shape=shape,
                                             batch_input_shape=shape, scale_factor=(1., 1.)))
        model.forward = partial(model.forward, data_samples=[sample], mode='tensor')
        if type(getattr(model, 'roi_head', None)).__name__ == 'CascadeRoIHead':
            model.roi_head.forward = partial(cascade_roi_tensor_forward, model.roi_head)
    else:
        model.forward = partial(model.forward, data_samples=None, mode='tensor')
    return model


def complexity(cfg: Config, shape: Sequence[int], backbone_only: bool = False,
               show_table: bool = False) -> dict:
    """Parameters and FLOPs of ``cfg``'s model (or backbone) for a (H, W) input.

    Returns:
        dict: ``params``, ``flops`` and ``product_flops`` (the part of
        ``flops`` in products of two activations, see
        ``ACTIVATION_PRODUCTS``), ints; ``table`` (str) if asked.
    """
    height, width = (shape[0], shape[0]) if len(shape) == 1 else shape
    model = build_cpu_model(cfg)
    target = model.backbone if backbone_only else tensor_forward(model, height, width)
    with torch.no_grad():
        analyzer = FlopAnalyzer(target, (torch.zeros(1, 3, height, width), ))
        analyzer.set_op_handle('aten::scaled_dot_product_attention', attention_flops)
        analyzer.unsupported_ops_warnings(False).uncalled_modules_warnings(False)
        by_operator = analyzer.by_operator()
        result = dict(params=parameter_count(target)[''], flops=analyzer.total(),
                      product_flops=sum(by_operator.get(op, 0) for op in ACTIVATION_PRODUCTS))
        if show_table:
            result['table'] = complexity_stats_table(analyzer, show_param_shapes=False)
    return result


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    shape = args.shape if len(args.shape) == 2 else args.shape * 2
    check_input_size(*shape, 'count')
    cfg = apply_cfg_options(read_config(args.config), args.cfg_options)
    result = complexity(cfg, shape, args.backbone_only, args.show_table)
    if args.show_table:
        print(result['table'])
    what = 'backbone' if args.backbone_only else 'model'
    print(f'{args.config} ({what}), input 1x3x{shape[0]}x{shape[1]}:\n'
          f'  params: {result["params"] / 1e6:.2f} M\n'
          f'  FLOPs:  {result["flops"] / 1e9:.2f} G, of which {result["product_flops"] / 1e9:.2f} G '
          'in products of two activations (attention), which mmcv\'s hook-based counter omits')


if __name__ == '__main__':
    run_main(main)
