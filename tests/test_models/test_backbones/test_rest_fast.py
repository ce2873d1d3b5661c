"""The fast ResT backbone computes the spec's function (its reference implementation,
``ResT(impl='reference')``) with its lean attention: same outputs and gradients, any size,
chunked or not, keeping no score map for backward."""
from typing import Dict, Tuple

import pytest
import torch
import torch.nn.functional as F

from mmrmt.models import ResT
from mmrmt.models.backbones import rest_attention
from mmrmt.models.backbones.rest import (EfficientMultiHeadAttention, FastEfficientMultiHeadAttention, FastResTBlock,
                                         ResTBlock)
from mmrmt.models.backbones.rest_attention import mixed_head_attention
from mmrmt.models.layers import run_mode
from helpers.backbones import REST_TINY as TINY
from helpers.rounding import LAMBDA, assert_close, one_computation, two_implementations


def plain_mixed_head_attention(q, k, v, mix_weight, mix_bias, scale):
    """The spec's ops on (B, N, n, d) q and (B, N', n, d) k, v."""
    scores = F.conv2d(torch.matmul(q.transpose(1, 2), k.permute(0, 2, 3, 1)) * scale, mix_weight, mix_bias)
    attn = F.instance_norm(scores.softmax(dim=-1))
    return torch.matmul(attn, v.transpose(1, 2)).transpose(1, 2)


def attention_inputs(batch, length, keys, heads, dims, dtype=torch.float64, value_mean=0.):
    generator = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=generator, dtype=dtype)

    return (randn(batch, length, heads, dims), randn(batch, keys, heads, dims),
            randn(batch, keys, heads, dims) + value_mean, randn(heads, heads, 1, 1), randn(heads))


def values_and_grads(function, inputs, scale):
    inputs = [t.detach().clone().requires_grad_() for t in inputs]
    out = function(*inputs, scale)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(out)
    return out, torch.autograd.grad((out * weights).sum(), inputs)


@pytest.mark.parametrize('chunk_rows', [None, 1, 7])
@pytest.mark.parametrize('shape', [(2, 37, 11, 4, 8), (1, 50, 50, 2, 16), (3, 20, 6, 8, 4)])
def test_attention_core_equals_the_plain_ops_in_float64_chunked_or_not(monkeypatch, shape, chunk_rows):
    batch, _, keys, heads, _ = shape
    if chunk_rows is not None:
        monkeypatch.setattr(rest_attention, 'ROW_CHUNK_BYTES', chunk_rows * batch * heads * keys * 8)
    inputs = attention_inputs(*shape, value_mean=3.)
    scale = shape[-1] ** -0.5
    out, grads = values_and_grads(mixed_head_attention, inputs, scale)
    expected, expected_grads = values_and_grads(plain_mixed_head_attention, inputs, scale)
    # q k^T (dims terms), the head mixing (heads), the softmax and (.) v (keys), the
    # instance norm: 4 steps; a gradient of q, k or v sums over the queries too
    assert_close(out, expected, two_implementations(torch.float64, max(shape[2:]), 4))
    for grad, expected_grad in zip(grads[:4], expected_grads[:4]):
        assert_close(grad, expected_grad, two_implementations(torch.float64, max(shape[1:]), 8))
    # The bias shifts whole softmax rows: no effect, gradient exactly zero (autograd's is rounding).
    assert torch.equal(grads[4], torch.zeros_like(grads[4]))
    rounding = one_computation(torch.float64, batch * shape[1] * keys, 8) * expected_grads[3].abs().max()
    assert expected_grads[4].abs().max() < rounding


def test_attention_core_keeps_float32_precision_where_the_plain_ops_lose_it():
    # Near-uniform attention (as at initialisation) and values with a large mean.
    q, k, v, weight, bias = attention_inputs(2, 400, 60, 4, 16, value_mean=20.)
    q, k = q * 1e-2, k * 1e-2
    scale = 16 ** -0.5
    exact, exact_grads = values_and_grads(plain_mixed_head_attention, (q, k, v, weight, bias), scale)
    single = [t.float() for t in (q, k, v, weight, bias)]

    def relative_errors(function):
        out, grads = values_and_grads(function, single, scale)
        return [((a.double() - b).abs().max() / b.abs().max()).item()
                for a, b in zip((out, *grads[:4]), (exact, *exact_grads[:4]))]

    ours, plain = relative_errors(mixed_head_attention), relative_errors(plain_mixed_head_attention)
    # float32's rounding of the attention core (4 steps, up to 400 terms, 8 for a gradient)
    assert max(ours) < one_computation(torch.float32, 400, 8), ours
    assert all(a < b for a, b in zip(ours, plain)), (ours, plain)


def test_attention_core_keeps_no_score_map_for_backward():
    q, k, v, weight, bias = (t.float().requires_grad_() for t in attention_inputs(2, 600, 80, 4, 8))
    saved = []

    def pack(tensor):
        saved.append(tensor.numel())
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        out = mixed_head_attention(q, k, v, weight, bias, 8 ** -0.5)
    out.sum().backward()
    # q, k, w, the output and a few floats per row: O(N d), where one score map is N' / d times q.
    assert max(saved) <= q.numel() and sum(saved) < 3 * q.numel() < 2 * 4 * 600 * 80 / 3, saved


def test_one_key_one_query_maps_give_zero_and_zero_gradients():
    inputs = [t.requires_grad_() for t in attention_inputs(2, 1, 1, 2, 4)]
    out = mixed_head_attention(*inputs, 0.5)
    out.sum().backward()
    assert torch.equal(out, torch.zeros_like(out))
    assert all(torch.equal(t.grad, torch.zeros_like(t)) for t in inputs)


def test_fast_is_default_and_reference_selectable():
    """Every class the two implementations differ in is the chosen one's, throughout the model."""
    def classes(model: ResT) -> set:
        return {type(m) for m in model.modules() if isinstance(m, (ResTBlock, EfficientMultiHeadAttention))}

    assert classes(ResT(TINY)) == {FastResTBlock, FastEfficientMultiHeadAttention}
    assert classes(ResT(TINY, impl='reference')) == {ResTBlock, EfficientMultiHeadAttention}


def build_pair(seed: int = 0) -> Tuple[ResT, ResT]:
    """The backbone (no drop path) and the reference with the same random parameters and BN statistics."""
    torch.manual_seed(seed)
    model = ResT(TINY, drop_path_rate=0.)
    model.init_weights()
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if tensor.is_floating_point():
                tensor.copy_(torch.rand_like(tensor) + 0.5 if 'running_var' in name else torch.randn_like(tensor) * 0.3)
    reference = ResT(TINY, drop_path_rate=0., impl='reference')
    reference.load_state_dict(model.state_dict())
    return model, reference


def outputs_and_grads(model, image: torch.Tensor, train: bool) -> Tuple[tuple, Dict[str, torch.Tensor]]:
    model.train(train)
    image = image.clone().requires_grad_()
    outputs = model(image)
    generator = torch.Generator().manual_seed(2)
    loss = sum((out * torch.randn(out.shape, generator=generator, dtype=torch.float64).to(out)).sum()
               for out in outputs)
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(loss, [image, *params.values()], allow_unused=True)
    return outputs, dict(zip(['image', *params], grads))


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    return ((actual.double() - expected.double()).abs().max() / expected.double().abs().max()).item()


def backbone_tolerance(dtype: torch.dtype, model: torch.nn.Module, image: torch.Tensor) -> float:
    """ResT's rounding in ``dtype`` on ``image``: the longest reduction is a stem
    parameter's gradient over every position of the first map (stride 2), the
    depth at most one step per layer."""
    terms = image.shape[0] * (image.shape[2] // 2 + 1) * (image.shape[3] // 2 + 1)
    return one_computation(dtype, terms, sum(1 for module in model.modules() if not list(module.children())))


@pytest.mark.parametrize('train', [True, False])
@pytest.mark.parametrize('shape', [(2, 3, 61, 45), (2, 3, 32, 96)])
def test_backbone_equals_the_reference_in_float64(shape, train):
    model, reference = (m.double() for m in build_pair())
    image = torch.randn(shape, dtype=torch.float64)
    outputs, grads = outputs_and_grads(model, image, train)
    expected, expected_grads = outputs_and_grads(reference, image, train)
    tolerance = 2 * backbone_tolerance(torch.float64, model, image)  # two float64 computations
    for out, exp in zip(outputs, expected):
        assert out.shape == exp.shape
        assert relative_error(out, exp) < tolerance
    largest = max(grad.abs().max().item() for grad in expected_grads.values())
    for name, grad in grads.items():
        # Biases before a norm or a softmax get zero in exact arithmetic: rounding noise both,
        # relative to the largest gradient.
        assert_close(grad, expected_grads[name], tolerance, largest, msg=name)
        if name.endswith('transform_conv.bias'):
            assert torch.equal(grad, torch.zeros_like(grad)), name


@pytest.mark.parametrize('shape', [(3, 3, 61, 45), (2, 3, 32, 96)])
def test_cpu_inference_path_equals_the_reference_in_float64(monkeypatch, shape):
    """Eval without autograd: images in chunks per stage, convolutions on channels-last memory."""
    monkeypatch.setattr(run_mode, 'INFERENCE_CHUNK_BYTES', 1)  # one image a chunk in every stage
    model, reference = (m.double().eval() for m in build_pair())
    image = torch.randn(shape, dtype=torch.float64)
    tolerance = 2 * backbone_tolerance(torch.float64, model, image)  # two float64 computations
    with torch.no_grad():
        for out, exp in zip(model(image), reference(image)):
            assert out.shape == exp.shape
            assert relative_error(out, exp) < tolerance


@pytest.mark.slow  # float64 finite differences over the whole backbone
def test_backbone_gradients_match_finite_differences_where_the_last_grid_is_one_row():
    """(1, 3, 32, 96): the last stage's grid is 1x3 (there the reference's autograd, not
    ours, disagrees with finite differences: a torch issue with such degenerate maps)."""
    model = build_pair()[0].double().train()
    image = torch.randn(1, 3, 32, 96, dtype=torch.float64)
    _, grads = outputs_and_grads(model, image, train=True)
    params = dict(model.named_parameters())
    generator = torch.Generator().manual_seed(3)
    for name in ('image', 'patch_embed_4.norm.bias', 'stage3.1.attn.transform_conv.weight', 'stem.conv1.weight'):
        tensor = image if name == 'image' else params[name]
        direction = torch.randn(tensor.shape, generator=generator, dtype=torch.float64)
        losses = []
        with torch.no_grad():
            for step in (1e-6, -2e-6, 1e-6):
                tensor += step * direction
                if len(losses) < 2:
                    losses.append(outputs_and_grads_loss(model, image))
        numeric = (losses[0] - losses[1]) / 2e-6
        analytic = (grads[name] * direction).sum().item()
        # the central difference errs by the two losses' float64 rounding over the step, 2 err_L / (2 h),
        # and by its truncation h^2 f'''/6 (unit-scale third derivatives on unit-scale inputs: h^2)
        rounding = backbone_tolerance(torch.float64, model, image) * max(map(abs, losses)) / 1e-6
        assert numeric == pytest.approx(analytic, rel=LAMBDA * 1e-12, abs=rounding), name


def outputs_and_grads_loss(model, image: torch.Tensor) -> float:
    """The loss of :func:`outputs_and_grads`, without gradients."""
    generator = torch.Generator().manual_seed(2)
    return sum((out * torch.randn(out.shape, generator=generator, dtype=torch.float64).to(out)).sum()
               for out in model(image)).item()


def test_backbone_in_float32_is_as_close_to_float64_as_float32_allows():
    """Outputs and gradients in float32 within float32 rounding of the float64 reference."""
    model, reference = build_pair()
    image = torch.randn(2, 3, 64, 80)
    outputs, grads = outputs_and_grads(model, image, train=True)
    exact, exact_grads = outputs_and_grads(reference.double(), image.double(), train=True)
    tolerance = backbone_tolerance(torch.float32, model, image)
    assert max(relative_error(out, exp) for out, exp in zip(outputs, exact)) < tolerance
    largest = max(grad.abs().max().item() for grad in exact_grads.values())
    for name, grad in grads.items():  # relative to the largest: the biases whose gradient is zero
        assert_close(grad, exact_grads[name].float(), tolerance, largest, msg=name)


def test_backbone_trains_under_bfloat16_autocast():
    model, _ = build_pair()
    with torch.autocast('cpu', dtype=torch.bfloat16):
        outputs = model.train()(torch.randn(1, 3, 64, 64))
    sum(out.float().square().mean() for out in outputs).backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 and torch.isfinite(p.grad).all()
               for p in model.parameters())


@pytest.mark.parametrize('chunks', ['images', 'attention rows'])
def test_cpu_inference_in_chunks_gives_the_same_outputs(monkeypatch, chunks):
    """Eval inference on a few images at a time per stage (ResT.forward), attention on a few rows at a time."""
    model, _ = build_pair()
    model.eval()
    image = torch.randn(5, 3, 64, 64)
    calls = []
    with torch.no_grad():
        whole = model(image)
        if chunks == 'images':  # the MLP hidden maps of one 64x64 image: 16x16x32, 8x8x64, 4x4x96, 2x2x128 floats
            monkeypatch.setattr(run_mode, 'INFERENCE_CHUNK_BYTES', 2 * 16 * 16 * 32 * 4)
            monkeypatch.setattr(model, 'stage_forward', lambda stage, part, run=model.stage_forward:
                                calls.append((stage, len(part))) or run(stage, part))
        else:
            monkeypatch.setattr(rest_attention, 'ROW_CHUNK_BYTES', 1)
        chunked = model(image)
    # two images a chunk in stage 1, four in stage 2, all five later: the last chunk shorter (in_image_chunks)
    assert calls == ([(0, 2), (0, 2), (0, 1), (1, 4), (1, 1), (2, 5), (3, 5)] if chunks == 'images' else [])
    # float32 rounding of two computations (other chunks: other kernel blockings)
    tolerance = 2 * backbone_tolerance(torch.float32, model, image)
    assert max(relative_error(b, a) for a, b in zip(whole, chunked)) < tolerance


@pytest.mark.parametrize('grad', [True, False])
def test_sr_convs_run_in_float32_when_training_under_bfloat16_autocast(grad):
    """With autograd the strided depthwise ``sr`` convs take float32 (their bf16 backward is an order of
    magnitude the slower on the CPU); without it they run in autocast's bf16, as every other conv."""
    model, _ = build_pair()
    seen = []
    for module in model.modules():
        if isinstance(module, FastEfficientMultiHeadAttention) and module.sr_ratio > 1:
            module.sr.register_forward_hook(lambda conv, args, out: seen.append((args[0].dtype, out.dtype)))
    with torch.set_grad_enabled(grad), torch.autocast('cpu', dtype=torch.bfloat16):
        model.train(grad)(torch.randn(1, 3, 64, 64))
    expected = torch.float32 if grad else torch.bfloat16
    assert seen and all(dtypes == (expected, expected) for dtypes in seen)
