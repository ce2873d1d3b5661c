"""The runs a graph of fixed shapes attends in, so that no more than :data:`EXPORT_LOGITS_BYTES` of logits
exist at once.

A recorded graph of the backbones attends in plain ops
(:func:`mmrmt.models.layers.plain_attention.plain_attention`). A runtime
holds each tensor of a graph whole, where eager's fused attention never
materialises the logits: in a graph of fixed shapes
(:func:`.fixed_shapes.exports_fixed_shapes`) the export forms compute the
attention in the runs of :func:`fixed_shape_runs`.
"""
import math
from typing import Optional, Tuple

import torch

from mmrmt.models.layers.plain_attention import QUERIES, logits_shape
from .fixed_shapes import exports_fixed_shapes

#: Most bytes of attention logits a graph of fixed shapes computes at once: as many as RMT's eager
#: attention materialises (``FastManhattanSelfAttention.explicit_logits_bytes``), or
#: :data:`LOGITS_OVER_QUERIES` times the queries' bytes where that is more.
EXPORT_LOGITS_BYTES = 16 * 2**20
#: A run's logits may take this many times the bytes of the queries: the graph holds maps of their
#: size anyway (q, k, v; the block's MLP hidden map has 3-4 times as many bytes). Runs of smaller
#: logits save little of the peak and cost a copy of each operand and of the output (measured in
#: docs/deployment.md, "Peak memory of one large image").
LOGITS_OVER_QUERIES = 4


def within_export_budget(num_bytes: int) -> bool:
    """Whether a tensor of ``num_bytes`` is no larger than the logits a fixed-shape graph's attention
    computes at once (:data:`EXPORT_LOGITS_BYTES`)."""
    return num_bytes <= EXPORT_LOGITS_BYTES


def attention_runs(q: torch.Tensor, k: torch.Tensor, leading: Optional[int] = None,
                   logits_bytes: Optional[int] = None, queries_unit: int = 1) -> Tuple[int, int]:
    """Where and how finely to split the attention of ``q`` (..., Lq, d) against ``k`` (..., Lk, d) for
    each run's logits to take at most ``logits_bytes`` (by default :data:`EXPORT_LOGITS_BYTES` or
    :data:`LOGITS_OVER_QUERIES` times the bytes of ``q``, the more).

    Returns ``(dim, length)``: runs of ``length`` along ``dim``, a negative
    index of the logits (..., Lq, Lk) (the last run shorter; ``length`` the
    dim's size: one pass). The first of the logits' first ``leading``
    leading dims (all by default) whose single slices fit is split, from the
    left: its slices are contiguous and the products keep their shapes.
    Failing that the queries are (:data:`QUERIES`), in multiples of
    ``queries_unit`` (which must divide Lq; e.g. the queries of one grid
    row), at least one unit a run. The runs are as few as fit, of equal length.
    """
    if logits_bytes is None:
        logits_bytes = max(EXPORT_LOGITS_BYTES, LOGITS_OVER_QUERIES * q.numel() * q.element_size())
    shape = logits_shape(q, k)
    total = math.prod(shape) * q.element_size()
    if total <= logits_bytes:
        return QUERIES, shape[QUERIES]
    rank = len(shape)
    leading = rank - 2 if leading is None else leading
    for dim in [*range(-rank, -rank + leading), QUERIES]:
        unit = queries_unit if dim == QUERIES else 1
        units = shape[dim] // unit
        units_a_run = logits_bytes // (total // units)
        if units_a_run >= 1 or dim == QUERIES:
            runs = math.ceil(units / max(1, units_a_run))
            return dim, math.ceil(units / runs) * unit


def fixed_shape_runs(q: torch.Tensor, k: torch.Tensor, leading: Optional[int] = None) -> Optional[Tuple[int, int]]:
    """The runs of :func:`attention_runs` (of the first ``leading`` leading dims, all by default) in a graph
    of fixed shapes (:func:`.fixed_shapes.exports_fixed_shapes`); None (one pass) otherwise."""
    return attention_runs(q, k, leading) if exports_fixed_shapes() else None
