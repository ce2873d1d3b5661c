"""Attention through torch's fused kernel where it runs under the kernel set in force, explicitly elsewhere.

``F.scaled_dot_product_attention`` on the CPU packs half-precision
operands for the AMX tiles whenever oneDNN finds the CPU's tiles for
their dtype (``amx_bf16``, ``amx_fp16``), and only ATen's AVX-512 kernels
can pack: under a lower ``ATEN_CPU_CAPABILITY`` (``default``, ``avx2``) on
such a CPU the kernel raises (``pack_vnni2 is only supported when avx512
is supported``). :func:`fused_attention_runs` tells those runs apart, once
per process, from the CPU's flags (:mod:`mmrmt.cpu_features`) and the
ATen kernel set (``torch.backends.cpu.get_cpu_capability()``), and
:func:`scaled_dot_product_attention` computes them with explicit products
instead.
"""
from functools import lru_cache
from typing import FrozenSet, Optional

import torch
import torch.nn.functional as F

from mmrmt.cpu_features import cpu_features

#: The /proc/cpuinfo flag of the AMX tiles torch's fused CPU attention packs each half-precision dtype for.
AMX_TILES = {torch.bfloat16: 'amx_bf16', torch.float16: 'amx_fp16'}


def packing_kernel_runs(dtype: torch.dtype, flags: FrozenSet[str], capability: str) -> bool:
    """Whether torch's fused CPU attention of ``dtype`` runs on a CPU of ``flags`` under the ATen kernel
    set ``capability`` (a value of ``torch.backends.cpu.get_cpu_capability()``, e.g. 'AVX2').

    It fails only where it packs operands for AMX tiles (the CPU has them for
    ``dtype``) in a kernel set below AVX-512, which has no packing.
    """
    return AMX_TILES.get(dtype) not in flags or capability.upper().startswith('AVX512')


@lru_cache(maxsize=None)
def _cpu_kernel_runs(dtype: torch.dtype) -> bool:
    return packing_kernel_runs(dtype, cpu_features().flags, torch.backends.cpu.get_cpu_capability())


def fused_attention_runs(q: torch.Tensor) -> bool:
    """Whether ``F.scaled_dot_product_attention`` of queries like ``q`` runs under the kernel set in force
    (see the module's docstring); always on devices other than the CPU."""
    return q.device.type != 'cpu' or _cpu_kernel_runs(q.dtype)


def explicit_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor],
                       scale: float) -> torch.Tensor:
    """``softmax(scale q k^T + mask) v`` as explicit products, differentiable; half-precision scores are
    masked and normalised in float32 (as the fused kernels do), the products stay in ``q``'s dtype."""
    scores = torch.matmul(q, k.transpose(-1, -2)).to(torch.promote_types(q.dtype, torch.float32)) * scale
    if mask is not None:
        scores = scores + mask
    return torch.matmul(torch.softmax(scores, dim=-1).to(v.dtype), v)


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: Optional[torch.Tensor] = None, scale: Optional[float] = None) -> torch.Tensor:
    """``F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)`` where torch's fused kernel
    runs (:func:`fused_attention_runs`), :func:`explicit_attention` elsewhere (``scale`` defaulting to
    ``d ** -0.5`` as SDPA's)."""
    if fused_attention_runs(q):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    return explicit_attention(q, k, v, mask, q.shape[-1] ** -0.5 if scale is None else scale)
