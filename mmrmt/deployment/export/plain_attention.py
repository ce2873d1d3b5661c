"""Attention as MatMul, Mul, Add and Softmax: the ONNX ops of every opset a toolchain exports at.

``scaled_dot_product_attention`` has an ONNX form from opset 14 on only, and
even there the exporters write it as these same nodes (ONNX has no fused
attention op before opset 23): exported graphs get them written out, at any opset.

A runtime holds each tensor of a graph whole, where eager's fused attention
never materialises the logits: in a graph of fixed shapes
(:func:`.fixed_shapes.exports_fixed_shapes`) the attention is computed in runs
(:func:`attention_runs`), so that no more than :data:`EXPORT_LOGITS_BYTES` of
logits exist at once.
"""
import math
from typing import Optional, Tuple

import torch

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
#: The dim of the logits (..., queries, keys) that holds the queries.
QUERIES = -2


def within_export_budget(num_bytes: int) -> bool:
    """Whether a tensor of ``num_bytes`` is no larger than the logits a fixed-shape graph's attention
    computes at once (:data:`EXPORT_LOGITS_BYTES`)."""
    return num_bytes <= EXPORT_LOGITS_BYTES


def logits_shape(q: torch.Tensor, k: torch.Tensor) -> Tuple[int, ...]:
    """The shape of ``q k^T`` for ``q`` (..., Lq, d) and ``k`` (..., Lk, d): (..., Lq, Lk)."""
    return (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])


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


def run_of(t: Optional[torch.Tensor], dim: int, start: int, length: int) -> Optional[torch.Tensor]:
    """The run ``start:start + length`` along (negative) ``dim`` of an operand, itself where it
    broadcasts there (size one or fewer dims)."""
    if t is None or t.dim() < -dim or t.shape[dim] == 1:
        return t
    return t.narrow(dim, start, min(length, t.shape[dim] - start))


def plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor] = None,
                    scale: Optional[float] = None) -> torch.Tensor:
    """``softmax(scale q k^T + mask) v`` over the last two dims, any leading dims broadcast.

    The scale (``1 / sqrt(d)`` by default, as SDPA's) multiplies ``q``, a
    (L, d) product instead of the (L, L) logits'. In a graph of fixed shapes,
    in the runs of :func:`attention_runs` (of every operand that does not
    broadcast along the split dim; for runs of queries, of ``q`` and the
    mask's rows), their outputs concatenated.
    """
    q = q * (q.shape[-1] ** -0.5 if scale is None else scale)
    if not exports_fixed_shapes():
        return _attend(q, k, v, mask)
    dim, length = attention_runs(q, k)
    size = logits_shape(q, k)[dim]
    if length >= size:
        return _attend(q, k, v, mask)
    runs = []
    for start in range(0, size, length):
        q_run, mask_run = run_of(q, dim, start, length), run_of(mask, dim, start, length)
        k_run, v_run = (k, v) if dim == QUERIES else (run_of(k, dim, start, length), run_of(v, dim, start, length))
        runs.append(_attend(q_run, k_run, v_run, mask_run))
    return torch.cat(runs, dim=dim)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    """``softmax(q k^T + mask) v`` for an already scaled ``q``."""
    logits = torch.matmul(q, k.transpose(-1, -2))
    if mask is not None:
        logits = logits + mask
    return torch.matmul(torch.softmax(logits, dim=-1), v)
