"""The dtype half-precision attention computes in, by CPU and ATen kernel set (mmrmt.amp.cpu_attention)."""
import pytest
import torch

from mmrmt.amp.cpu_attention import cpu_attention_dtypes

ZEN3 = frozenset('avx2 fma'.split())
ZEN4 = ZEN3 | frozenset('avx512f avx512bw avx512_vnni avx512_bf16'.split())
SAPPHIRE_RAPIDS = ZEN4 | frozenset('amx_tile amx_bf16 amx_int8'.split())
GRANITE_RAPIDS = SAPPHIRE_RAPIDS | frozenset(['amx_fp16'])


@pytest.mark.parametrize('flags,capability,dtype,runs', [
    (SAPPHIRE_RAPIDS, 'AVX512', torch.bfloat16, True),
    (SAPPHIRE_RAPIDS, 'AVX2', torch.bfloat16, False),  # it would pack for the tiles, and cannot
    (SAPPHIRE_RAPIDS, 'DEFAULT', torch.bfloat16, False),
    (GRANITE_RAPIDS, 'AVX512', torch.float16, True),
    (SAPPHIRE_RAPIDS, 'DEFAULT', torch.float16, True),  # no fp16 tiles: nothing to pack for
    (GRANITE_RAPIDS, 'DEFAULT', torch.float16, False),
    (ZEN4, 'AVX2', torch.bfloat16, True),
    (frozenset(), 'DEFAULT', torch.bfloat16, True),
])
def test_the_half_precision_kernel_raises_only_on_tiles_below_avx512_kernels(flags, capability, dtype, runs):
    assert cpu_attention_dtypes(flags, capability, backward=False)[dtype] == (dtype if runs else torch.float32)


@pytest.mark.parametrize('flags,capability,backward,bf16,fp16', [
    (SAPPHIRE_RAPIDS, 'AVX512', True, torch.float32, torch.float32),  # the slower half-precision backward
    (SAPPHIRE_RAPIDS, 'AVX512', False, torch.bfloat16, torch.float16),
    (SAPPHIRE_RAPIDS, 'AVX2', True, torch.float32, torch.float32),
    (SAPPHIRE_RAPIDS, 'AVX2', False, torch.float32, torch.float16),  # never the kernel that raises
    (GRANITE_RAPIDS, 'AVX512', True, torch.float32, torch.float32),
    (GRANITE_RAPIDS, 'AVX512', False, torch.bfloat16, torch.float16),
    (GRANITE_RAPIDS, 'DEFAULT', False, torch.float32, torch.float32),
    (ZEN4, 'AVX512', True, torch.float32, torch.float32),
    (ZEN4, 'AVX512', False, torch.bfloat16, torch.float16),
    (ZEN3, 'DEFAULT', False, torch.bfloat16, torch.float16),
])
def test_half_precision_attends_in_float32_with_autograd_or_where_its_kernel_raises(
        flags, capability, backward, bf16, fp16):
    assert cpu_attention_dtypes(flags, capability, backward) == {torch.bfloat16: bf16, torch.float16: fp16}
