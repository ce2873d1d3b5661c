"""RoI pooling in float32 under CPU autocast.

mmcv's ``RoIAlign`` has CPU kernels for float32 and float64 only: a two-stage
detector run under ``torch.autocast('cpu', torch.bfloat16)`` (or float16)
hands it the reduced-precision features the FPN computed and dies in the
kernel (``"ROIAlign_forward" not implemented for 'BFloat16'``); autocast does
not cover extension ops, so nothing casts for it. Casting the features alone
would not do: mmdet's RoI extractors cast the RoIs to the features' type
first, and bfloat16 keeps 8 significant bits, which rounds a box corner at
x = 1000 to a multiple of 4 pixels (and moves RoIs between pyramid levels).
Within :func:`float32_roi_pooling` an RoI extractor given reduced-precision
CPU features pools their (exact) float32 values at the float32 RoIs; the
heads after it run in the autocast precision again (their linear and
convolution layers are autocast ops).
"""
import sys
from contextlib import contextmanager
from functools import partial
from typing import Iterator, Optional, Sequence

import torch
from torch import nn

REDUCED_PRECISIONS = (torch.bfloat16, torch.float16)


def extract_in_float32(extractor: nn.Module, feats: Sequence[torch.Tensor], rois: torch.Tensor,
                       roi_scale_factor: Optional[float] = None) -> torch.Tensor:
    """``extractor(feats, rois, roi_scale_factor)``, computed in float32 for reduced-precision CPU
    features."""
    forward = type(extractor).forward
    if feats[0].device.type == 'cpu' and feats[0].dtype in REDUCED_PRECISIONS:
        feats, rois = tuple(feat.float() for feat in feats), rois.float()
    return forward(extractor, feats, rois, roi_scale_factor)


@contextmanager
def float32_roi_pooling(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block, ``model``'s RoI extractors pool reduced-precision CPU features in float32.

    Args:
        model (nn.Module): Any model; its mmdet RoI extractors get the float32 forward for the
            block's duration (a model without them is left as it is).
    """
    # a model holding an mmdet RoI extractor has imported its module (a segmentation-only install has none)
    roi_extractors = sys.modules.get('mmdet.models.roi_heads.roi_extractors')
    extractors = [] if roi_extractors is None else [
        module for module in model.modules() if isinstance(module, roi_extractors.BaseRoIExtractor)]
    for extractor in extractors:
        extractor.forward = partial(extract_in_float32, extractor)
    try:
        yield model
    finally:
        for extractor in extractors:
            del extractor.forward
