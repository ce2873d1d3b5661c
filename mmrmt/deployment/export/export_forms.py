"""Export forms of layers whose eager forward does not export: same outputs, other ops.

:func:`export_forms` switches them on for the duration of an export:

* mmrmt's backbones: RMT's relative position and MaSA and ResT's attention
  take their export forms (:func:`.export.export_implementation`).
* RoI pooling: mmdet's ``SingleRoIExtractor`` gathers each pyramid level's
  RoIs with ``nonzero``, skips empty levels in Python, and pools with mmcv's
  ``RoIAlign``, whose ONNX form predates opset 13 and does not reproduce its
  ``aligned=True`` sampling. :func:`pool_rois_on_their_levels` pools with
  torchvision's ``roi_align`` (the same bilinear average as mmcv's, exported
  as ONNX RoiAlign with half-pixel coordinates) on every level and keeps,
  per RoI, the result of its level: the same features, from a graph
  without data-dependent shapes. On the other levels each RoI is pooled as
  an empty box, which RoiAlign samples nowhere (its adaptive sampling takes
  as many points as the box is large), so the graph pools each RoI about
  once, as mmdet does, instead of four times at full cost. Below opset 16
  ONNX's RoiAlign has no half-pixel mode (torchvision then writes
  ``aligned=False`` sampling, with a warning): the RoIs are shifted by half
  a feature pixel instead, the same sampling for every RoI at least one
  feature pixel wide and high on its level (RoiAlign before opset 16
  stretches thinner ones to one pixel; mmdet's level mapping puts any RoI
  with a side under 4 input pixels on the stride-4 level).
* Adaptive average pooling (UperNet's pyramid pooling): the TorchScript
  exporter exports ``AdaptiveAvgPool2d`` only for a fixed input size that
  its output size divides; :func:`adaptive_average_pool` averages each
  output cell's bin of rows, then of columns (the bins of
  ``AdaptiveAvgPool2d``: from ``floor(i n / k)`` to ``ceil((i + 1) n / k)``)
  with slices whose bounds follow the input's size.
* Box decoding (Cascade R-CNN's refinement between stages): mmdet's
  ``DeltaXYWHBBoxCoder.decode`` takes, while exported, a branch that imports
  a module mmdet 3 no longer has; :func:`decode_deltas` decodes with its
  eager ``delta2bbox`` and clips to an image size that may be a tensor of
  the graph (so a dynamic graph clips to its input's size).
"""
from contextlib import contextmanager
from functools import partial
from typing import Iterator, Optional, Sequence

import torch
from torch import nn
from torch.nn.modules.utils import _pair

from .backbone_forms import export_implementation

#: The first opset whose RoiAlign samples as mmcv's ``aligned=True`` (half-pixel coordinates).
HALF_PIXEL_ROI_ALIGN_OPSET = 16


def pool_rois_on_their_levels(extractor: nn.Module, feats: Sequence[torch.Tensor], rois: torch.Tensor,
                              roi_scale_factor: Optional[float] = None,
                              opset: int = HALF_PIXEL_ROI_ALIGN_OPSET) -> torch.Tensor:
    """What ``SingleRoIExtractor.forward`` returns, computed without data-dependent shapes, for a
    graph of ``opset``."""
    from torchvision.ops import roi_align
    rois = rois.type_as(feats[0])
    num_levels = len(feats)
    levels = extractor.map_roi_levels(rois, num_levels)
    if roi_scale_factor is not None:
        rois = extractor.roi_rescale(rois, roi_scale_factor)
    empty_rois = rois[:, [0, 1, 2, 1, 2]]  # (image, x1, y1, x1, y1): no area, no samples
    pooled = None
    for level, layer in enumerate(extractor.roi_layers[:num_levels]):
        if layer.pool_mode != 'avg':
            raise ValueError(f'exporting RoI pooling with pool_mode={layer.pool_mode!r} is not '
                             "supported, only 'avg' (mmdet's default)")
        chosen = (levels == level).view(-1, 1)
        level_rois, aligned = torch.where(chosen, rois, empty_rois), layer.aligned
        if aligned and opset < HALF_PIXEL_ROI_ALIGN_OPSET:  # (x1, y1, x2, y2) - 1/2 feature pixel
            level_rois = level_rois - level_rois.new_tensor([0] + [0.5 / layer.spatial_scale] * 4)
            aligned = False
        features = roi_align(feats[level], level_rois, layer.output_size, layer.spatial_scale,
                             layer.sampling_ratio, aligned)
        chosen = chosen.view(-1, 1, 1, 1)
        pooled = features if pooled is None else torch.where(chosen, features, pooled)
    return pooled


def exact_roi_min_side(model: nn.Module, opset: int) -> float:
    """The shortest RoI side, in input pixels, that a graph of ``opset`` pools as ``model`` does: 0 when
    every RoI is pooled exactly (from opset 16 on, or without ``aligned`` RoIAlign); below, one
    feature pixel of the finest aligned level (see :func:`pool_rois_on_their_levels`)."""
    from mmdet.models.roi_heads.roi_extractors import SingleRoIExtractor
    if opset >= HALF_PIXEL_ROI_ALIGN_OPSET:
        return 0.0
    strides = [1 / layer.spatial_scale for module in model.modules() if isinstance(module, SingleRoIExtractor)
               for layer in module.roi_layers if layer.aligned]
    return min(strides) if strides else 0.0


def average_bins(x: torch.Tensor, dim: int, bins: int) -> torch.Tensor:
    """``x`` averaged over ``bins`` adaptive bins along ``dim`` (as ``AdaptiveAvgPool``)."""
    size = x.shape[dim]
    means = [x.narrow(dim, i * size // bins, ((i + 1) * size + bins - 1) // bins - i * size // bins)
             .mean(dim, keepdim=True) for i in range(bins)]
    return torch.cat(means, dim)


def adaptive_average_pool2d(x: torch.Tensor, output_size) -> torch.Tensor:
    """What ``F.adaptive_avg_pool2d(x, output_size)`` returns, computed with slices and means."""
    height, width = _pair(output_size)
    height = x.shape[-2] if height is None else height
    width = x.shape[-1] if width is None else width
    return average_bins(average_bins(x, -2, height), -1, width)


def adaptive_average_pool(pool: nn.AdaptiveAvgPool2d, x: torch.Tensor) -> torch.Tensor:
    """What ``pool(x)`` returns, computed with slices and means."""
    return adaptive_average_pool2d(x, pool.output_size)


def decode_deltas(coder, bboxes, pred_bboxes: torch.Tensor, max_shape=None,
                  wh_ratio_clip: float = 16 / 1000):
    """What ``DeltaXYWHBBoxCoder.decode`` returns for one image's (N, 4 k) deltas."""
    from mmdet.models.task_modules.coders.delta_xywh_bbox_coder import delta2bbox
    from mmdet.structures.bbox import HorizontalBoxes, get_box_tensor
    decoded = delta2bbox(get_box_tensor(bboxes), pred_bboxes, coder.means, coder.stds, None,
                         wh_ratio_clip, False, coder.add_ctr_clamp, coder.ctr_clamp)
    if coder.clip_border and max_shape is not None:
        height_width = torch.as_tensor(max_shape)[:2].to(decoded)
        upper = height_width.flip(0).repeat(decoded.shape[-1] // 2)  # (w, h, w, h, ...)
        decoded = torch.min(decoded.clamp(min=0), upper)
    return HorizontalBoxes(decoded) if coder.use_box_type else decoded


@contextmanager
def export_forms(model: nn.Module, opset: int = HALF_PIXEL_ROI_ALIGN_OPSET) -> Iterator[nn.Module]:
    """Within the context, the model's backbone layers (:func:`.export.export_implementation`), RoI
    extractors, adaptive poolings and box coders take their export forms, for a graph of ``opset``."""
    from mmdet.models.roi_heads.roi_extractors import SingleRoIExtractor
    from mmdet.models.task_modules.coders import DeltaXYWHBBoxCoder
    forms = {SingleRoIExtractor: partial(pool_rois_on_their_levels, opset=opset),
             nn.AdaptiveAvgPool2d: adaptive_average_pool}
    patched = []  # (object, name of the method replaced on it)
    for module in model.modules():
        for cls, form in forms.items():
            if isinstance(module, cls):
                module.forward = partial(form, module)
                patched.append((module, 'forward'))
        coder = getattr(module, 'bbox_coder', None)
        if isinstance(coder, DeltaXYWHBBoxCoder) and 'decode' not in vars(coder):
            coder.decode = decode_deltas.__get__(coder)
            patched.append((coder, 'decode'))
    try:
        with export_implementation(model):
            yield model
    finally:
        for owner, name in patched:
            delattr(owner, name)
