"""An export form of mmdet's multi-level RoI extractor.

mmdet's ``SingleRoIExtractor`` gathers each pyramid level's RoIs with
``nonzero`` and skips empty levels in Python, and pools them with mmcv's
``RoIAlign``, whose ONNX form predates opset 13 and does not reproduce its
``aligned=True`` sampling. While a model is exported, :func:`export_roi_extractors`
has every such extractor pool all RoIs on every level with torchvision's
``roi_align`` (the same bilinear average as mmcv's, exported as ONNX RoiAlign
with half-pixel coordinates) and keep, per RoI, the result of its level:
the same features, from a graph without data-dependent shapes.
"""
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

import torch
from torch import nn


def pool_rois_on_their_levels(extractor: nn.Module, feats: Sequence[torch.Tensor], rois: torch.Tensor,
                              roi_scale_factor: Optional[float] = None) -> torch.Tensor:
    """What ``SingleRoIExtractor.forward`` returns, computed without data-dependent shapes."""
    from torchvision.ops import roi_align
    rois = rois.type_as(feats[0])
    num_levels = len(feats)
    levels = extractor.map_roi_levels(rois, num_levels)
    if roi_scale_factor is not None:
        rois = extractor.roi_rescale(rois, roi_scale_factor)
    pooled = None
    for level, layer in enumerate(extractor.roi_layers[:num_levels]):
        if layer.pool_mode != 'avg':
            raise ValueError(f'exporting RoI pooling with pool_mode={layer.pool_mode!r} is not '
                             "supported, only 'avg' (mmdet's default)")
        features = roi_align(feats[level], rois, layer.output_size, layer.spatial_scale,
                             layer.sampling_ratio, layer.aligned)
        chosen = (levels == level).view(-1, 1, 1, 1)
        pooled = features if pooled is None else torch.where(chosen, features, pooled)
    return pooled


@contextmanager
def export_roi_extractors(model: nn.Module) -> Iterator[nn.Module]:
    """Within the context, the model's multi-level RoI extractors take their export form."""
    from mmdet.models.roi_heads.roi_extractors import SingleRoIExtractor
    extractors = [module for module in model.modules() if isinstance(module, SingleRoIExtractor)]
    for extractor in extractors:
        extractor.forward = pool_rois_on_their_levels.__get__(extractor)
    try:
        yield model
    finally:
        for extractor in extractors:
            del extractor.forward
