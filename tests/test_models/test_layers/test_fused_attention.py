"""The dtype the backbones' attention computes in on this CPU, and torch's fused attention in it."""
import pytest
import torch
import torch.nn.functional as F

from mmrmt.amp.cpu_attention import CPU_ATTENTION_DTYPES, cpu_attention_dtypes
from mmrmt.cpu_features import cpu_features
from mmrmt.models.layers import fused_attention
from mmrmt.models.layers.fused_attention import attention_dtype, scaled_dot_product_attention
from helpers.attended_dtypes import BF16_ATTENDED_IN
from helpers.rounding import assert_within_low_precision


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
