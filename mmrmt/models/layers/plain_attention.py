"""Attention as MatMul, Mul, Add and Softmax: what a recorded graph of the backbones attends with.

``scaled_dot_product_attention`` has an ONNX form from opset 14 on only, and
even there the exporters write it as these same nodes (ONNX has no fused
attention op before opset 23): a graph recorded from the backbones (any
exporter or tracer, see :func:`.run_mode.records_graph`) attends with them,
at any opset. The attention may be computed in runs along one dim of its
logits (``runs``): the deployment side's graphs of fixed shapes hold no more
than a budget of logits at once (``mmrmt.deployment.export.plain_attention``
decides the runs).
"""
from typing import Optional, Tuple

import torch

#: The dim of the logits (..., queries, keys) that holds the queries.
QUERIES = -2


def logits_shape(q: torch.Tensor, k: torch.Tensor) -> Tuple[int, ...]:
    """The shape of ``q k^T`` for ``q`` (..., Lq, d) and ``k`` (..., Lk, d): (..., Lq, Lk)."""
    return (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])


def run_of(t: Optional[torch.Tensor], dim: int, start: int, length: int) -> Optional[torch.Tensor]:
    """The run ``start:start + length`` along (negative) ``dim`` of an operand, itself where it
    broadcasts there (size one or fewer dims)."""
    if t is None or t.dim() < -dim or t.shape[dim] == 1:
        return t
    return t.narrow(dim, start, min(length, t.shape[dim] - start))


def plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor] = None,
                    scale: Optional[float] = None, runs: Optional[Tuple[int, int]] = None) -> torch.Tensor:
    """``softmax(scale q k^T + mask) v`` over the last two dims, any leading dims broadcast.

    The scale (``1 / sqrt(d)`` by default, as SDPA's) multiplies ``q``, a
    (L, d) product instead of the (L, L) logits'. ``runs`` ``(dim, length)``:
    computed in runs of ``length`` along ``dim``, a negative index of the
    logits (..., Lq, Lk) (of every operand that does not broadcast there; for
    runs of queries, of ``q`` and the mask's rows), their outputs
    concatenated; by default in one pass.
    """
    q = q * (q.shape[-1] ** -0.5 if scale is None else scale)
    if runs is None:
        return attend(q, k, v, mask)
    dim, length = runs
    size = logits_shape(q, k)[dim]
    if length >= size:
        return attend(q, k, v, mask)
    outputs = []
    for start in range(0, size, length):
        q_run, mask_run = run_of(q, dim, start, length), run_of(mask, dim, start, length)
        k_run, v_run = (k, v) if dim == QUERIES else (run_of(k, dim, start, length), run_of(v, dim, start, length))
        outputs.append(attend(q_run, k_run, v_run, mask_run))
    return torch.cat(outputs, dim=dim)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor]) -> torch.Tensor:
    """``softmax(q k^T + mask) v`` for an already scaled ``q``."""
    logits = torch.matmul(q, k.transpose(-1, -2))
    if mask is not None:
        logits = logits + mask
    return torch.matmul(torch.softmax(logits, dim=-1), v)
