"""Fused attention where torch's kernel runs under the kernel set in force, explicit products elsewhere."""
import pytest
import torch
import torch.nn.functional as F

from mmrmt.cpu_features import cpu_features
from mmrmt.models.layers import fused_attention, scaled_dot_product_attention
from mmrmt.models.layers.fused_attention import explicit_attention, fused_attention_runs, packing_kernel_runs
from helpers.rounding import assert_close, assert_within_low_precision, two_implementations

ZEN3 = frozenset('avx2 fma'.split())
ZEN4 = ZEN3 | frozenset('avx512f avx512bw avx512_vnni avx512_bf16'.split())
SAPPHIRE_RAPIDS = ZEN4 | frozenset('amx_tile amx_bf16 amx_int8'.split())
GRANITE_RAPIDS = SAPPHIRE_RAPIDS | frozenset(['amx_fp16'])


@pytest.mark.parametrize('flags,capability,dtype,runs', [
    (SAPPHIRE_RAPIDS, 'DEFAULT', torch.bfloat16, False),  # packs for the tiles in a kernel that cannot
    (SAPPHIRE_RAPIDS, 'AVX2', torch.bfloat16, False),
    (SAPPHIRE_RAPIDS, 'AVX512', torch.bfloat16, True),
    (SAPPHIRE_RAPIDS, 'AVX2', torch.float16, True),  # no fp16 tiles: nothing packed
    (GRANITE_RAPIDS, 'AVX2', torch.float16, False),
    (GRANITE_RAPIDS, 'AVX512', torch.float16, True),
    (SAPPHIRE_RAPIDS, 'DEFAULT', torch.float32, True),  # float32 is never packed
    (ZEN4, 'DEFAULT', torch.bfloat16, True),  # no tiles: the plain kernels
    (ZEN4, 'AVX2', torch.bfloat16, True),
    (ZEN3, 'AVX2', torch.bfloat16, True),
    (frozenset(), 'DEFAULT', torch.bfloat16, True),  # /proc/cpuinfo unreadable
])
def test_fused_kernel_is_refused_only_where_it_would_pack_below_avx512(flags, capability, dtype, runs):
    assert packing_kernel_runs(dtype, flags, capability) is runs


def test_the_decision_reads_this_cpu_and_kernel_set_and_holds_off_the_cpu():
    q = torch.empty(1, 1, 4, 8, dtype=torch.bfloat16)
    assert fused_attention_runs(q) is packing_kernel_runs(torch.bfloat16, cpu_features().flags,
                                                          torch.backends.cpu.get_cpu_capability())
    assert fused_attention_runs(q.to('meta'))


def qkv(dtype, seed=0, length=70, keys=66):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 3, length, 16, generator=generator)
    k, v = (torch.randn(2, 3, keys, 16, generator=generator) for _ in range(2))
    mask = -torch.rand(1, 3, length, keys, generator=generator) * 4
    return [t.to(dtype) for t in (q, k, v, mask)]


def results(attend, dtype, weights):
    """Output and the gradients of q, k and v, in ``dtype``."""
    q, k, v, mask = (t.requires_grad_(i < 3) for i, t in enumerate(qkv(dtype)))
    out = attend(q, k, v, mask)
    return [out, *torch.autograd.grad((out * weights.to(dtype)).sum(), [q, k, v])]


#: q k^T (16 terms), the softmax and (.) v (66 terms each).
DEPTH = 3


@pytest.mark.parametrize('masked', [True, False])
def test_explicit_attention_equals_sdpa_in_float64(masked):
    weights = torch.randn(2, 3, 70, 16, dtype=torch.float64)

    def fused(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask if masked else None, scale=0.3)

    def explicit(q, k, v, mask):
        return explicit_attention(q, k, v, mask if masked else None, 0.3)

    for ours, theirs in zip(results(explicit, torch.float64, weights), results(fused, torch.float64, weights)):
        assert_close(ours, theirs, two_implementations(torch.float64, 66, DEPTH))


@pytest.mark.parametrize('fused', [True, False])
def test_bf16_attention_with_either_path_within_bf16_rounding(monkeypatch, fused):
    """Forward and backward under bf16, through torch's kernel or (as on an AMX CPU below AVX-512) the
    explicit products, each within bfloat16's rounding of float64, given float32's error."""
    monkeypatch.setattr(fused_attention, 'fused_attention_runs', lambda q: fused)
    weights = torch.randn(2, 3, 70, 16)

    def attend(q, k, v, mask):
        return scaled_dot_product_attention(q, k, v, mask, 0.3)

    low = results(attend, torch.bfloat16, weights)
    assert all(t.dtype == torch.bfloat16 for t in low)
    full, exact = results(attend, torch.float32, weights), results(attend, torch.float64, weights)
    assert_within_low_precision(low, full, exact, torch.bfloat16, [66] * 4)


def test_default_scale_is_sdpa_s(monkeypatch):
    q, k, v, _ = qkv(torch.float64)
    monkeypatch.setattr(fused_attention, 'fused_attention_runs', lambda q: False)
    assert_close(scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v),
                 two_implementations(torch.float64, 66, DEPTH))
