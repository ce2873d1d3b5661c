"""The dtype the backbones' attention computes in, and torch's fused attention in it: on the CPU, half
precision attends in the dtype of :data:`mmrmt.amp.cpu_attention.CPU_ATTENTION_DTYPES` (float32 with autograd,
and without autograd where torch's fused kernel would raise: AMX tiles under a kernel set below AVX-512), a
setting of the amp side read once per process; other devices attend in the operands' dtype.
"""
from typing import Optional

import torch
import torch.nn.functional as F

from mmrmt.amp.cpu_attention import CPU_ATTENTION_DTYPES
from .run_mode import keeps_autograd


def attention_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype attention over operands like ``x`` computes in: ``x``'s, except half precision on the
    CPU, which attends in :data:`~mmrmt.amp.cpu_attention.CPU_ATTENTION_DTYPES` (see the module)."""
    if x.device.type != 'cpu':
        return x.dtype
    return CPU_ATTENTION_DTYPES[keeps_autograd()].get(x.dtype, x.dtype)


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: Optional[torch.Tensor] = None, scale: Optional[float] = None) -> torch.Tensor:
    """``F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)`` computed in
    :func:`attention_dtype` (not autocast's), returned in ``q``'s dtype."""
    dtype = attention_dtype(q)
    with torch.autocast(q.device.type, enabled=False):
        out = F.scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype),
                                             attn_mask=None if mask is None else mask.to(dtype), scale=scale)
    return out.to(q.dtype)
