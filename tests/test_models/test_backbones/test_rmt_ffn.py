"""RMT's fast FFN (after its pre-norm) and the folded-residual depthwise conv compute the reference forms."""
import copy

import pytest
import torch
from torch import nn

from mmrmt.models.backbones.rmt.depthwise_conv import ChannelsLastDWConv
from mmrmt.models.backbones.rmt.fast_ffn import FastConvFFN
from mmrmt.models.backbones.rmt.ffn import ConvFFN
from helpers.rounding import assert_close, assert_within_low_precision, two_implementations


def ffn_pair(embed_dims: int = 12, hidden_dims: int = 20):
    torch.manual_seed(0)
    plain = ConvFFN(embed_dims, hidden_dims)
    for param in plain.parameters():
        nn.init.normal_(param, std=0.4)
    fast = FastConvFFN(embed_dims, hidden_dims)
    fast.load_state_dict(plain.state_dict())
    norm = nn.LayerNorm(embed_dims, eps=1e-6)
    nn.init.normal_(norm.weight, 1, 0.2), nn.init.normal_(norm.bias, std=0.2)
    return plain, fast, norm


#: The FFN's steps: the norm (over 12 channels), fc1 (12 terms), the 3x3
#: depthwise conv (9), fc2 (20 hidden channels): at most 20 terms, depth 4.
FFN_TOLERANCE = two_implementations(torch.float32, 20, 4)


def grad_tolerance(x: torch.Tensor) -> float:
    """A weight's or bias's gradient sums over every position of ``x`` (and the FFN's depth)."""
    return two_implementations(torch.float32, max(20, x.numel() // x.shape[-1]), 4)


def all_params(*modules):
    return [p for module in modules for p in module.parameters()]


@pytest.mark.parametrize('with_norm', [True, False])
@pytest.mark.parametrize('shape', [(2, 5, 7), (1, 1, 9), (3, 4, 1)])
def test_fast_ffn_equals_plain_outputs_and_gradients(with_norm, shape):
    plain, fast, norm = ffn_pair()
    x = torch.randn(*shape, 12)
    x_plain, x_fast = x.clone().requires_grad_(), x.clone().requires_grad_()
    out_plain = plain(norm(x_plain) if with_norm else x_plain)
    out_fast = fast(x_fast, norm if with_norm else None)
    assert_close(out_fast, out_plain, FFN_TOLERANCE)
    weights = torch.randn_like(out_plain)
    norms = [norm] if with_norm else []
    expected = torch.autograd.grad((out_plain * weights).sum(), [x_plain, *all_params(plain, *norms)])
    got = torch.autograd.grad((out_fast * weights).sum(), [x_fast, *all_params(fast, *norms)])
    for ours, ref in zip(got, expected):
        assert_close(ours, ref, grad_tolerance(x))


def test_fast_ffn_without_autograd_equals_plain():
    plain, fast, norm = ffn_pair()
    x = torch.randn(2, 6, 5, 12)
    with torch.no_grad():
        assert_close(fast(x, norm), plain(norm(x)), FFN_TOLERANCE)


def test_fast_ffn_keeps_one_hidden_map_in_training():
    plain, fast, norm = ffn_pair()
    x = torch.randn(1, 8, 8, 12, requires_grad=True)

    def hidden_maps_kept(ffn):
        storages = set()

        def pack(tensor):
            if tensor.numel() == 8 * 8 * 20:  # a hidden map, in any view
                storages.add(tensor.untyped_storage().data_ptr())
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            ffn(x, norm) if isinstance(ffn, FastConvFFN) else ffn(norm(x))
        return len(storages)

    assert hidden_maps_kept(plain) == 3  # fc1 output, GELU output, conv sum
    assert hidden_maps_kept(fast) == 1  # fc1 output only


def test_fast_ffn_trains_under_bf16_autocast():
    """bfloat16 output; gradients within bfloat16's rounding of the plain form's
    in float64 (given the fast form's float32 error)."""
    plain, fast, norm = ffn_pair()
    x, weights = torch.randn(2, 6, 7, 12), torch.randn(2, 6, 7, 12)

    def grads(ffn, dtype, autocast):
        ffn, ffn_norm = copy.deepcopy(ffn).to(dtype), copy.deepcopy(norm).to(dtype)
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=autocast):
            out = ffn(x.to(dtype), ffn_norm) if isinstance(ffn, FastConvFFN) else ffn(ffn_norm(x.to(dtype)))
        assert out.dtype == (torch.bfloat16 if autocast else dtype)
        return torch.autograd.grad((out.to(dtype) * weights.to(dtype)).sum(), all_params(ffn, ffn_norm))

    low, full = grads(fast, torch.float32, True), grads(fast, torch.float32, False)
    exact = grads(plain, torch.float64, False)
    assert all(grad.dtype == torch.float32 for grad in low)
    positions = x.numel() // x.shape[-1]  # a weight's or bias's gradient sums over them
    assert_within_low_precision(low, full, exact, torch.bfloat16, [positions] * len(exact))


@pytest.mark.parametrize('kernel_size', [3, 5])
def test_forward_residual_is_x_plus_conv(kernel_size):
    torch.manual_seed(0)
    conv = ChannelsLastDWConv(8, kernel_size)
    x = torch.randn(2, 6, 9, 8)
    x_fused, x_plain = x.clone().requires_grad_(), x.clone().requires_grad_()
    fused, plain = conv.forward_residual(x_fused), x_plain + conv(x_plain)
    assert_close(fused, plain, two_implementations(torch.float32, kernel_size ** 2))  # one depthwise conv
    got = torch.autograd.grad(fused.sum(), [x_fused, *conv.parameters()])
    expected = torch.autograd.grad(plain.sum(), [x_plain, *conv.parameters()])
    for ours, ref in zip(got, expected):  # the weight's and bias's gradients sum over every position
        assert_close(ours, ref, two_implementations(torch.float32, x.numel() // x.shape[-1]))
