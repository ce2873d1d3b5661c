"""The dtype the backbones' attention computes in, by CPU and kernel set, and torch's fused attention in it."""
import pytest
import torch
import torch.nn.functional as F

from mmrmt.cpu_features import cpu_features
from mmrmt.models.layers import fused_attention
from mmrmt.models.layers.fused_attention import (CPU_ATTENTION_DTYPES, attention_dtype, cpu_attention_dtypes,
                                                 half_precision_kernel_runs, scaled_dot_product_attention,
                                                 uses_amx_tiles)
from helpers.attended_dtypes import BF16_ATTENDED_IN
from helpers.rounding import assert_within_low_precision

ZEN3 = frozenset('avx2 fma'.split())
ZEN4 = ZEN3 | frozenset('avx512f avx512bw avx512_vnni avx512_bf16'.split())
SAPPHIRE_RAPIDS = ZEN4 | frozenset('amx_tile amx_bf16 amx_int8'.split())
GRANITE_RAPIDS = SAPPHIRE_RAPIDS | frozenset(['amx_fp16'])


@pytest.mark.parametrize('flags,capability,dtype,tiles', [
    (SAPPHIRE_RAPIDS, 'AVX512', torch.bfloat16, True),
    (SAPPHIRE_RAPIDS, 'DEFAULT', torch.bfloat16, False),  # the kernel would pack for the tiles, and cannot
    (SAPPHIRE_RAPIDS, 'AVX2', torch.bfloat16, False),
    (SAPPHIRE_RAPIDS, 'AVX512', torch.float16, False),  # no fp16 tiles
    (GRANITE_RAPIDS, 'AVX512', torch.float16, True),
    (GRANITE_RAPIDS, 'AVX2', torch.float16, False),
    (SAPPHIRE_RAPIDS, 'AVX512', torch.float32, False),  # float32 is never packed
    (ZEN4, 'AVX512', torch.bfloat16, False),  # AVX-512 BF16 without tiles
    (ZEN3, 'AVX2', torch.bfloat16, False),
    (frozenset(), 'DEFAULT', torch.bfloat16, False),  # /proc/cpuinfo unreadable
])
def test_amx_tiles_are_used_only_with_the_flags_for_the_dtype_and_avx512_kernels(flags, capability, dtype, tiles):
    assert uses_amx_tiles(dtype, flags, capability) is tiles


@pytest.mark.parametrize('flags,capability,dtype,runs', [
    (SAPPHIRE_RAPIDS, 'AVX512', torch.bfloat16, True),
    (SAPPHIRE_RAPIDS, 'AVX2', torch.bfloat16, False),  # it would pack for the tiles, and cannot
    (SAPPHIRE_RAPIDS, 'DEFAULT', torch.float16, True),  # no fp16 tiles: nothing to pack for
    (GRANITE_RAPIDS, 'DEFAULT', torch.float16, False),
    (ZEN4, 'AVX2', torch.bfloat16, True),
    (frozenset(), 'DEFAULT', torch.bfloat16, True),
])
def test_the_half_precision_kernel_raises_only_on_tiles_below_avx512_kernels(flags, capability, dtype, runs):
    assert half_precision_kernel_runs(dtype, flags, capability) is runs


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


def test_this_process_reads_this_cpu_and_kernel_set_once_and_other_devices_keep_their_dtype():
    flags, capability = cpu_features().flags, torch.backends.cpu.get_cpu_capability()
    for backward in (False, True):
        dtypes = cpu_attention_dtypes(flags, capability, backward)
        assert CPU_ATTENTION_DTYPES[backward] == dtypes
        with torch.set_grad_enabled(backward):
            for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
                assert attention_dtype(torch.empty(0, dtype=dtype)) == dtypes.get(dtype, dtype)
                assert attention_dtype(torch.empty(0, dtype=dtype, device='meta')) == dtype


def qkv(dtype, length=70, keys=66):
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, length, 16, generator=generator)
    k, v = (torch.randn(2, 3, keys, 16, generator=generator) for _ in range(2))
    mask = -torch.rand(1, 3, length, keys, generator=generator) * 4
    return [t.to(dtype) for t in (q, k, v, mask)]


def results(dtype, weights):
    """Output and the gradients of q, k and v of a masked attention with operands in ``dtype``."""
    q, k, v, mask = (t.requires_grad_(i < 3) for i, t in enumerate(qkv(dtype)))
    out = scaled_dot_product_attention(q, k, v, mask, 0.3)
    return [out, *torch.autograd.grad((out * weights.to(out.dtype)).sum(), [q, k, v])]


@pytest.mark.parametrize('attended_in', BF16_ATTENDED_IN)
def test_bf16_operands_in_either_dtype_within_bf16_rounding(monkeypatch, attended_in):
    """Forward and backward of bf16 operands, attended in bf16 (as on other devices) or float32 (the CPU),
    each within bfloat16's rounding of float64 given float32's error, returned in bf16."""
    for dtypes in fused_attention.CPU_ATTENTION_DTYPES:
        monkeypatch.setitem(dtypes, torch.bfloat16, attended_in)
    weights = torch.randn(2, 3, 70, 16)
    low = results(torch.bfloat16, weights)
    assert all(t.dtype == torch.bfloat16 for t in low)
    assert_within_low_precision(low, results(torch.float32, weights), results(torch.float64, weights),
                                torch.bfloat16, [66] * 4)


def test_float_operands_are_sdpa_bit_for_bit_and_autocast_does_not_lower_them():
    q, k, v, mask = qkv(torch.float32)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with torch.autocast('cpu', torch.bfloat16):
        assert torch.equal(scaled_dot_product_attention(q, k, v, mask), expected)
