"""mmcv's float32-only CPU kernels, and the box decoding before them, in float32 under CPU autocast."""
from contextlib import contextmanager
from typing import Iterator

from torch import nn

from .float32_predictions import float32_predictions
from .float32_roi_pooling import float32_roi_pooling


@contextmanager
def float32_cpu_kernels(model: nn.Module) -> Iterator[nn.Module]:
    """Within the block, ``model``'s RoI pooling and heads' post-processing (mmcv's CPU RoIAlign
    and NMS, which take float32 only, and the box decoding) run in float32 under CPU autocast.

    Args:
        model (nn.Module): Any model (see :func:`float32_roi_pooling`, :func:`float32_predictions`).
    """
    with float32_roi_pooling(model), float32_predictions(model):
        yield model
