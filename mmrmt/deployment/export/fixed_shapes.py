"""Whether an export records a graph of fixed shapes: what the export forms ask beyond the eager run mode.

The layers' export forms (:mod:`.rmt_forms`, :mod:`.rest_forms`) compute
attention a few queries at a time in a graph of fixed shapes
(:mod:`.plain_attention`): a runtime holds every tensor of a graph whole,
and a graph of one detection-sized image would otherwise hold attention
logits of hundreds of MB at once, which eager's fused attention never
materialises. A graph that accepts other sizes cannot (the runs' bounds
would be the traced size's). Only the exporter's caller knows which graph
it writes: :func:`.onnx_export.export_onnx` without ``dynamic`` and mmdeploy conversions
with a static deploy config export inside :func:`fixed_shape_export`.
"""
from contextlib import contextmanager
from typing import Iterator

import torch

from mmrmt.models.layers.run_mode import torch_exports


def is_exporting() -> bool:
    """True while ``torch.onnx.export`` (either exporter) or ``torch.export`` records the forward."""
    return torch.onnx.is_in_onnx_export() or torch_exports()


#: Whether the exports being recorded write graphs of fixed shapes (see :func:`fixed_shape_export`): a
#: module global, which dynamo reads as a constant.
_fixed_shape_export = False


@contextmanager
def fixed_shape_export() -> Iterator[None]:
    """Within the context, an export records a graph of fixed shapes (see :func:`exports_fixed_shapes`).

    The exporter's caller knows whether the graph takes one input size only
    (no dynamic axes); the layers cannot tell it from the traced tensors.
    """
    global _fixed_shape_export
    outer, _fixed_shape_export = _fixed_shape_export, True
    try:
        yield
    finally:
        _fixed_shape_export = outer


def exports_fixed_shapes() -> bool:
    """True while an export (see :func:`is_exporting`) records a graph of fixed shapes, inside
    :func:`fixed_shape_export`."""
    return is_exporting() and _fixed_shape_export
