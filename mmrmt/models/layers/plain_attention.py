"""Attention as MatMul, Mul, Add and Softmax: the ONNX ops of every opset a toolchain exports at.

``scaled_dot_product_attention`` has an ONNX form from opset 14 on only, and
even there the exporters write it as these same nodes (ONNX has no fused
attention op before opset 23): exported graphs get them written out, at any opset.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from .run_mode import is_exporting


def plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor] = None,
                    scale: Optional[float] = None) -> torch.Tensor:
    """``softmax(scale q k^T + mask) v`` over the last two dims, any leading dims broadcast.

    The scale (``1 / sqrt(d)`` by default, as SDPA's) multiplies ``q``, a
    (L, d) product instead of the (L, L) logits'.
    """
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    logits = torch.matmul(q * scale, k.transpose(-1, -2))
    if mask is not None:
        logits = logits + mask
    return torch.matmul(torch.softmax(logits, dim=-1), v)


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: Optional[torch.Tensor] = None, scale: Optional[float] = None) -> torch.Tensor:
    """``F.scaled_dot_product_attention``, exported as :func:`plain_attention` (any opset)."""
    if is_exporting():
        return plain_attention(q, k, v, mask, scale)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
