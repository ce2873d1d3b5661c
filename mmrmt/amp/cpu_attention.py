"""The dtype half-precision attention computes in on this CPU, read once per process from its flags
(:mod:`mmrmt.cpu_features`) and the ATen kernel set in force; the layers apply it
(:func:`mmrmt.models.layers.fused_attention.attention_dtype`).

torch's fused CPU attention runs half-precision operands on the AMX tiles under ATen's AVX-512 kernels; under a
kernel set below AVX-512 on a CPU with the tiles it raises (``pack_vnni2 is only supported when avx512 is
supported``). Its half-precision backward is slower than float32 operands on every CPU measured
(docs/benchmark.md). So half precision attends in float32 with autograd, and where the kernel would raise.
"""
from typing import Dict, FrozenSet

import torch

from mmrmt.cpu_features import cpu_features

#: The /proc/cpuinfo flag of the AMX tiles torch's fused CPU attention uses for each half-precision dtype.
AMX_TILES = {torch.bfloat16: 'amx_bf16', torch.float16: 'amx_fp16'}


def cpu_attention_dtypes(flags: FrozenSet[str], capability: str, backward: bool) -> Dict[torch.dtype, torch.dtype]:
    """What each half-precision dtype attends in on a CPU of ``flags`` (/proc/cpuinfo) under the ATen kernel set
    ``capability`` (e.g. 'AVX2'), for a forward whose backward follows (``backward``) or not: float32 with
    ``backward`` or where the kernel would raise (on a CPU with tiles for the dtype under a kernel set below
    AVX-512's, the only one that packs operands for them), itself otherwise."""
    packs = capability.upper().startswith('AVX512')
    return {dtype: dtype if not backward and (AMX_TILES[dtype] not in flags or packs) else torch.float32
            for dtype in AMX_TILES}


#: :func:`cpu_attention_dtypes` here, without and with a backward (indexed by ``run_mode.keeps_autograd()``), read
#: once (constants to dynamo).
CPU_ATTENTION_DTYPES = tuple(cpu_attention_dtypes(cpu_features().flags, torch.backends.cpu.get_cpu_capability(),
                                                  backward) for backward in (False, True))
