"""mmcv's float32-only CPU kernels, and the box decoding before them, in float32 under CPU autocast.

mmcv's ``RoIAlign`` and NMS have float32 (and float64) CPU kernels only, and autocast does not cover extension ops:
under ``torch.autocast('cpu', torch.bfloat16)`` a two-stage detector dies in the kernel (``"ROIAlign_forward" not
implemented for 'BFloat16'``). Casting the features alone would not do: mmdet's RoI extractors cast the RoIs to the
features' type, and bfloat16 rounds a box corner at x = 1000 to a multiple of 4 pixels. So an RoI extractor pools
reduced-precision CPU features as float32 at float32 RoIs, and every head's ``predict_by_feat`` (decoding, NMS) gets
float32 inputs with autocast off; the layers between keep the autocast precision.
"""
from contextlib import contextmanager
from functools import partial
from typing import Any, Iterator, Optional, Sequence

import torch
from torch import nn

REDUCED_PRECISIONS = (torch.bfloat16, torch.float16)


def in_float32(value: Any) -> Any:
    """``value`` with its reduced-precision CPU tensors (also inside lists and tuples) in float32."""
    if isinstance(value, torch.Tensor) and value.device.type == 'cpu' and value.dtype in REDUCED_PRECISIONS:
        return value.float()
    if isinstance(value, (list, tuple)) and not hasattr(value, '_fields'):
        return type(value)(in_float32(item) for item in value)
    return value


def extract_in_float32(extractor: nn.Module, feats: Sequence[torch.Tensor], rois: torch.Tensor,
                       roi_scale_factor: Optional[float] = None) -> torch.Tensor:
    """``extractor(feats, rois, roi_scale_factor)``, its reduced-precision CPU features and RoIs in float32."""
    return type(extractor).forward(extractor, in_float32(feats), in_float32(rois), roi_scale_factor)


def predict_in_float32(head: nn.Module, *args, **kwargs) -> Any:
    """``head.predict_by_feat(*args, **kwargs)`` on float32 inputs with CPU autocast off."""
    with torch.autocast('cpu', enabled=False):
        return type(head).predict_by_feat(head, *in_float32(args), **{k: in_float32(v) for k, v in kwargs.items()})


@contextmanager
def float32_roi_pooling(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block, ``model``'s mmdet RoI extractors (each submodule whose class has mmdet's
    ``BaseRoIExtractor.build_roi_layers``) pool reduced-precision CPU features in float32."""
    extractors = [module for module in model.modules() if callable(getattr(type(module), 'build_roi_layers', None))]
    for extractor in extractors:
        extractor.forward = partial(extract_in_float32, extractor)
    try:
        yield model
    finally:
        for extractor in extractors:
            del extractor.forward


@contextmanager
def float32_cpu_kernels(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block, ``model``'s RoI pooling and its heads' post-processing (each submodule whose class has a
    ``predict_by_feat``: mmdet's and mmseg's heads) run in float32 under CPU autocast."""
    heads = [module for module in model.modules() if callable(getattr(type(module), 'predict_by_feat', None))]
    for head in heads:
        head.predict_by_feat = partial(predict_in_float32, head)
    try:
        with float32_roi_pooling(model):
            yield model
    finally:
        for head in heads:
            del head.predict_by_feat
