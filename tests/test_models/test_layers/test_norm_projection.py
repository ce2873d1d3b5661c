"""norm_then_project computes LayerNorm then linears, keeping only the norm's input."""
import copy

import pytest
import torch
from torch import nn

from mmrmt.models.layers import norm_then_project
from helpers.rounding import assert_close, assert_within_low_precision, two_implementations


def build(seed: int = 0):
    torch.manual_seed(seed)
    norm = nn.LayerNorm(24, eps=1e-6)
    projections = [nn.Linear(24, 40), nn.Linear(24, 8)]
    for param in [*norm.parameters(), *(p for layer in projections for p in layer.parameters())]:
        nn.init.normal_(param, std=0.5)
    return norm, projections


#: The norm (over 24 channels) then a linear (24 terms): depth 2.
TOLERANCE = two_implementations(torch.float32, 24, 2)


def pairs(projections):
    return [(layer.weight, layer.bias) for layer in projections]


def params(norm, projections):
    return [*norm.parameters(), *(p for layer in projections for p in layer.parameters())]


@pytest.mark.parametrize('used', [(0, 1), (0, ), (1, )])
def test_outputs_and_gradients_equal_norm_then_linear(used):
    norm, projections = build()
    x = torch.randn(2, 5, 7, 24)
    x_ours, x_ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours = norm_then_project(x_ours, norm, pairs(projections))
    ref = [layer(norm(x_ref)) for layer in projections]
    for out, expected in zip(ours, ref):
        assert_close(out, expected, TOLERANCE)
    weights = [torch.randn_like(out) for out in ref]
    ours_grads = torch.autograd.grad(sum((ours[i] * weights[i]).sum() for i in used),
                                     [x_ours, *params(norm, projections)], allow_unused=True)
    ref_grads = torch.autograd.grad(sum((ref[i] * weights[i]).sum() for i in used),
                                    [x_ref, *params(norm, projections)], allow_unused=True)
    for got, expected in zip(ours_grads, ref_grads):
        if expected is None:  # a projection whose output is unused gets no gradient
            assert got is None
        else:
            # a weight's or bias's gradient sums over the 2 x 5 x 7 positions
            assert_close(got, expected, two_implementations(torch.float32, 2 * 5 * 7, 2))


def test_keeps_the_norm_input_not_its_output():
    norm, projections = build()
    x = torch.randn(1, 6, 6, 24, requires_grad=True)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        norm_then_project(x, norm, pairs(projections))
    activations = [t for t in saved if t.shape[:-1] == x.shape[:-1]]
    assert len(activations) == 1 and activations[0] is x


def test_without_norm_is_plain_linear():
    _, projections = build()
    x = torch.randn(3, 24)
    for out, layer in zip(norm_then_project(x, None, pairs(projections)), projections):
        assert_close(out, layer(x), two_implementations(torch.float32, 24))  # one product of 24 terms each


def test_bf16_autocast_runs_like_autocast_and_returns_parameter_dtypes():
    """Under bfloat16 autocast: autocast's dtypes, and outputs and gradients within
    bfloat16's rounding of float64 (as float32 is within float32's)."""
    norm, projections = build()
    x = torch.randn(2, 4, 4, 24)

    def outputs_and_grads(dtype, autocast):
        layers = [copy.deepcopy(module).to(dtype) for module in (norm, *projections)]
        x_ours = x.to(dtype).requires_grad_()
        with torch.autocast('cpu', dtype=torch.bfloat16, enabled=autocast):
            outs = norm_then_project(x_ours, layers[0], pairs(layers[1:]))
        grads = torch.autograd.grad(sum(out.to(dtype).sum() for out in outs), [x_ours, *params(layers[0], layers[1:])])
        return outs, grads

    low, low_grads = outputs_and_grads(torch.float32, True)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        ref = [layer(norm(x)) for layer in projections]
    assert [out.dtype for out in low] == [out.dtype for out in ref] == [torch.bfloat16] * 2
    assert all(grad.dtype == torch.float32 for grad in low_grads)
    full, full_grads = outputs_and_grads(torch.float32, False)
    exact, exact_grads = outputs_and_grads(torch.float64, False)
    positions = x.numel() // x.shape[-1]  # a weight's or bias's gradient sums over them
    terms = [1, 1, 1] + [positions] * (len(exact_grads) - 1)
    assert_within_low_precision([*low, *low_grads], [*full, *full_grads], [*exact, *exact_grads], torch.bfloat16,
                                terms)
