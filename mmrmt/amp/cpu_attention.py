"""The dtype half-precision attention computes in on this CPU: a setting read once per process from the CPU's
flags (:mod:`mmrmt.cpu_features`) and the ATen kernel set in force, which the layers' attention applies
(:func:`mmrmt.models.layers.fused_attention.attention_dtype`).

torch's fused CPU attention (``F.scaled_dot_product_attention``) runs half-precision operands on the AMX tiles
where oneDNN finds them for their dtype and ATen's AVX-512 kernels are in force; under a kernel set below
AVX-512 on a CPU with the tiles its half-precision kernel raises (``pack_vnni2 is only supported when avx512 is
supported``). Its half-precision backward is slower than float32 operands cast once on every CPU measured, AMX
tiles included (docs/benchmark.md). So half precision attends in float32 with autograd, and without autograd
where the kernel would raise.
"""
from typing import Dict, FrozenSet

import torch

from mmrmt.cpu_features import cpu_features

#: The /proc/cpuinfo flag of the AMX tiles torch's fused CPU attention uses for each half-precision dtype.
AMX_TILES = {torch.bfloat16: 'amx_bf16', torch.float16: 'amx_fp16'}


def uses_amx_tiles(dtype: torch.dtype, flags: FrozenSet[str], capability: str) -> bool:
    """Whether torch's fused CPU attention computes ``dtype`` on AMX tiles on a CPU of ``flags`` (its
    /proc/cpuinfo flags) under the ATen kernel set ``capability`` (``torch.backends.cpu.get_cpu_capability()``,
    e.g. 'AVX2'): the CPU has the tiles for ``dtype`` and the kernel set is AVX-512's, the only one that packs
    operands for them."""
    return AMX_TILES.get(dtype) in flags and capability.upper().startswith('AVX512')


def half_precision_kernel_runs(dtype: torch.dtype, flags: FrozenSet[str], capability: str) -> bool:
    """Whether torch's fused CPU attention runs half-precision ``dtype`` on a CPU of ``flags`` under the kernel
    set ``capability``: everywhere but on a CPU with tiles for ``dtype`` under a kernel set below AVX-512."""
    return AMX_TILES[dtype] not in flags or uses_amx_tiles(dtype, flags, capability)


def cpu_attention_dtypes(flags: FrozenSet[str], capability: str, backward: bool) -> Dict[torch.dtype, torch.dtype]:
    """What each half-precision dtype attends in on a CPU of ``flags`` under the kernel set ``capability``, for a
    forward whose backward follows (``backward``) or not: float32 with ``backward`` or where the kernel would
    raise (:func:`half_precision_kernel_runs`), itself otherwise."""
    return {dtype: dtype if not backward and half_precision_kernel_runs(dtype, flags, capability) else torch.float32
            for dtype in AMX_TILES}


#: :func:`cpu_attention_dtypes` of this CPU and the kernel set in force, without and with a backward (indexed by
#: :func:`mmrmt.models.layers.run_mode.keeps_autograd`), read once (constants to dynamo).
CPU_ATTENTION_DTYPES = tuple(cpu_attention_dtypes(cpu_features().flags, torch.backends.cpu.get_cpu_capability(),
                                                  backward) for backward in (False, True))
