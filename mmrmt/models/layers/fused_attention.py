"""The dtype the backbones' attention computes in, and torch's fused attention in it.

On the CPU, torch's fused attention (``F.scaled_dot_product_attention``)
runs half-precision operands on the AMX tiles where oneDNN finds them for
their dtype (``amx_bf16``, ``amx_fp16``) and ATen's AVX-512 kernels are in
force; under a kernel set below AVX-512 on a CPU with the tiles its
half-precision kernel raises (``pack_vnni2 is only supported when avx512 is
supported``). Its half-precision backward is slower than float32 operands
cast once on every CPU measured, AMX tiles included (docs/benchmark.md).
So half precision attends on the CPU in float32 with autograd, and without
autograd where the kernel would raise (:func:`attention_dtype`), decided
once per process from the CPU's flags (:mod:`mmrmt.cpu_features`) and the
ATen kernel set in force (``torch.backends.cpu.get_cpu_capability()``);
other devices attend in the operands' dtype.
"""
from typing import Dict, FrozenSet, Optional

import torch
import torch.nn.functional as F

from mmrmt.cpu_features import cpu_features
from .run_mode import keeps_autograd

#: The /proc/cpuinfo flag of the AMX tiles torch's fused CPU attention uses for each half-precision dtype.
AMX_TILES = {torch.bfloat16: 'amx_bf16', torch.float16: 'amx_fp16'}


def uses_amx_tiles(dtype: torch.dtype, flags: FrozenSet[str], capability: str) -> bool:
    """Whether torch's fused CPU attention computes ``dtype`` on AMX tiles on a CPU of ``flags`` (its
    /proc/cpuinfo flags) under the ATen kernel set ``capability`` (a value of
    ``torch.backends.cpu.get_cpu_capability()``, e.g. 'AVX2'): the CPU has the tiles for ``dtype`` and the
    kernel set is AVX-512's, the only one that packs operands for them."""
    return AMX_TILES.get(dtype) in flags and capability.upper().startswith('AVX512')


def half_precision_kernel_runs(dtype: torch.dtype, flags: FrozenSet[str], capability: str) -> bool:
    """Whether torch's fused CPU attention runs half-precision ``dtype`` on a CPU of ``flags`` under the ATen
    kernel set ``capability``: everywhere but on a CPU with tiles for ``dtype`` under a kernel set below
    AVX-512 (it would pack for the tiles, and cannot)."""
    return AMX_TILES[dtype] not in flags or uses_amx_tiles(dtype, flags, capability)


def cpu_attention_dtypes(flags: FrozenSet[str], capability: str, backward: bool) -> Dict[torch.dtype, torch.dtype]:
    """What each half-precision dtype attends in on a CPU of ``flags`` under the ATen kernel set
    ``capability``, for a forward whose backward follows (``backward``) or not: float32 if ``backward``
    (the half-precision backward is the slower, AMX tiles or not) or where the kernel would raise (see
    :func:`half_precision_kernel_runs`), itself otherwise."""
    return {dtype: dtype if not backward and half_precision_kernel_runs(dtype, flags, capability) else torch.float32
            for dtype in AMX_TILES}


#: :func:`cpu_attention_dtypes` of this CPU and the kernel set in force, without and with a backward
#: (indexed by :func:`.run_mode.keeps_autograd`), read once (constants to dynamo).
CPU_ATTENTION_DTYPES = tuple(cpu_attention_dtypes(cpu_features().flags, torch.backends.cpu.get_cpu_capability(),
                                                  backward) for backward in (False, True))


def attention_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype attention over operands like ``x`` computes in: ``x``'s, except half precision on the
    CPU, which attends in float32 with autograd, and without autograd where torch's fused kernel would
    raise (see the module's docstring)."""
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
