"""Heads' post-processing in float32 under CPU autocast.

A detector's heads turn their raw outputs into boxes in ``predict_by_feat``:
decode the box deltas against the anchors or RoIs, then NMS. Under
``torch.autocast('cpu', torch.bfloat16)`` their outputs are bfloat16, and
mmcv's CPU NMS takes float32 only (``expected scalar type Float but found
BFloat16``); decoded in bfloat16, a box corner at x = 1000 would also be
rounded to a multiple of 4 pixels. Within :func:`float32_predictions` every
``predict_by_feat`` of the model (mmdet's dense, bbox and mask heads, mmseg's
decode heads) gets its reduced-precision CPU tensors in float32 and runs with
autocast off; the layers before it keep the autocast precision.
"""
import types
from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch import nn

from .float32_roi_pooling import REDUCED_PRECISIONS


def in_float32(value: Any) -> Any:
    """``value`` with its reduced-precision CPU tensors (also inside lists and tuples) in float32."""
    if isinstance(value, torch.Tensor) and value.device.type == 'cpu' and value.dtype in REDUCED_PRECISIONS:
        return value.float()
    if isinstance(value, (list, tuple)) and not hasattr(value, '_fields'):
        return type(value)(in_float32(item) for item in value)
    return value


def predict_in_float32(head: nn.Module, *args, **kwargs) -> Any:
    """``head.predict_by_feat(*args, **kwargs)`` on float32 inputs with CPU autocast off."""
    with torch.autocast('cpu', enabled=False):
        return type(head).predict_by_feat(head, *in_float32(args), **{k: in_float32(v) for k, v in kwargs.items()})


@contextmanager
def float32_predictions(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block, ``model``'s heads post-process reduced-precision CPU outputs in float32.

    Args:
        model (nn.Module): Any model; each submodule whose class has a ``predict_by_feat``
            gets the float32 one for the block's duration.
    """
    heads = [module for module in model.modules() if callable(getattr(type(module), 'predict_by_feat', None))]
    for head in heads:
        head.predict_by_feat = types.MethodType(predict_in_float32, head)
    try:
        yield model
    finally:
        for head in heads:
            del head.predict_by_feat
