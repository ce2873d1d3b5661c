"""RoI pooling in float32 under CPU autocast.

mmcv's ``RoIAlign`` has CPU kernels for float32 and float64 only: a two-stage
detector run under ``torch.autocast('cpu', torch.bfloat16)`` (or float16)
hands it the reduced-precision features the FPN computed and dies in the
kernel (``"ROIAlign_forward" not implemented for 'BFloat16'``); autocast does
not cover extension ops, so nothing casts for it. Within
:func:`float32_roi_pooling` a CPU ``RoIAlign`` given reduced-precision
features pools their (exact) float32 values and rounds the result back to the
features' precision, which mmdet's ``SingleRoIExtractor`` gathers the levels
in: what a reduced-precision kernel computing in float32 returns, as mmcv's
CUDA kernels do for half precision.
"""
from contextlib import contextmanager
from functools import partial
from typing import Iterator

import torch
from torch import nn

REDUCED_PRECISIONS = (torch.bfloat16, torch.float16)


def pool_in_float32(layer: nn.Module, features: torch.Tensor, rois: torch.Tensor) -> torch.Tensor:
    """``layer(features, rois)``, computed in float32 for reduced-precision CPU features."""
    forward = type(layer).forward
    if features.device.type != 'cpu' or features.dtype not in REDUCED_PRECISIONS:
        return forward(layer, features, rois)
    return forward(layer, features.float(), rois.float()).to(features.dtype)


@contextmanager
def float32_roi_pooling(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block, ``model``'s mmcv ``RoIAlign`` layers pool reduced-precision CPU features
    in float32.

    Args:
        model (nn.Module): Any model; its ``mmcv.ops.RoIAlign`` layers get the float32 forward
            for the block's duration (a model without them is left as it is).
    """
    from mmcv.ops import RoIAlign
    layers = [module for module in model.modules() if isinstance(module, RoIAlign)]
    for layer in layers:
        layer.forward = partial(pool_in_float32, layer)
    try:
        yield model
    finally:
        for layer in layers:
            del layer.forward
