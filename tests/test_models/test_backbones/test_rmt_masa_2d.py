"""ManhattanSelfAttention2d: RMT's MaSA as a module on (N, C, H, W) maps of any network."""
import doctest
import re

import pytest
import torch
from mmdet.registry import MODELS as DET_MODELS
from mmseg.registry import MODELS as SEG_MODELS
from torch import nn

import mmrmt
from mmrmt.models import RMT, ManhattanSelfAttention2d
from mmrmt.models.backbones.rmt import masa_2d
from helpers.backbones import RMT_TINY
from helpers.rounding import assert_close, two_implementations


def rmt_and_masa(stage: int, impl: str):
    """RMT_TINY with random weights, and a MaSA module holding the weights of a block of ``stage``."""
    torch.manual_seed(0)
    model = RMT(RMT_TINY, impl=impl).eval()
    for param in model.parameters():  # random biases and decays too, so every term matters
        nn.init.normal_(param, std=0.3)
    masa = ManhattanSelfAttention2d(RMT_TINY['embed_dims'][stage], RMT_TINY['num_heads'][stage],
                                    decomposed=RMT_TINY['decomposed'][stage], impl=impl)
    masa.attention.load_state_dict(model.layers[stage].blocks[0].retention.state_dict())
    masa.relpos.load_state_dict(model.layers[stage].Relpos.state_dict())
    return model, masa


@pytest.mark.parametrize('impl', ['fast', 'reference'])
@pytest.mark.parametrize('stage', [1, 2], ids=['decomposed', 'full'])
def test_same_function_as_the_attention_inside_rmt(stage, impl):
    model, masa = rmt_and_masa(stage, impl)
    channels = RMT_TINY['embed_dims'][stage]
    x = torch.randn(2, 7, 9, channels)  # channels-last, as inside the block
    with torch.no_grad():
        inside = model.layers[stage].blocks[0].retention(x, model.layers[stage].Relpos)
        ours = masa(x.permute(0, 3, 1, 2))
    assert ours.shape == (2, channels, 7, 9)
    assert torch.equal(ours, inside.permute(0, 3, 1, 2))


@pytest.mark.parametrize('decomposed', [True, False])
@pytest.mark.parametrize('height,width', [(1, 1), (1, 13), (17, 3), (30, 45)])
def test_any_height_and_width_and_both_implementations_agree(decomposed, height, width):
    torch.manual_seed(0)
    fast = ManhattanSelfAttention2d(32, 4, decomposed=decomposed)
    reference = ManhattanSelfAttention2d(32, 4, decomposed=decomposed, impl='reference')
    reference.load_state_dict(fast.state_dict())
    x = torch.randn(2, 32, height, width)
    with torch.no_grad():
        out = fast(x)
        assert out.shape == x.shape
        # MaSA's 7 steps (tests/test_models/test_backbones/test_rmt_attention.py), reducing over
        # the 32 channels or the tokens attended
        assert_close(out, reference(x), two_implementations(torch.float32, max(32, height * width), 7))


@pytest.mark.parametrize('impl', ['fast', 'reference'])
@pytest.mark.parametrize('decomposed', [True, False])
def test_gradients_flow_inside_a_host_network(impl, decomposed):
    torch.manual_seed(0)
    host = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), ManhattanSelfAttention2d(16, 2, decomposed, impl=impl),
                         nn.Conv2d(16, 5, 1))
    image = torch.randn(2, 3, 11, 14, requires_grad=True)
    host(image).square().mean().backward()
    assert image.grad is not None and torch.isfinite(image.grad).all() and image.grad.abs().sum() > 0
    for name, param in host.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), name
        assert param.grad.abs().sum() > 0, name


def test_decay_is_built_inside_from_its_arguments():
    masa = ManhattanSelfAttention2d(48, 6, init_value=3, heads_range=2)
    heads = torch.arange(6, dtype=torch.float)
    # the power, 1 - (.) and the log, each rounded once in float32 (the log of a value near 1 errs by a few
    # u absolutely, not relatively: relative to the largest |decay|)
    assert_close(masa.relpos.decay, torch.log(1 - 2 ** (-3 - 2 * heads / 6)), two_implementations(torch.float32, 1, 3))
    assert sorted(masa.state_dict()) == sorted(
        ['relpos.angle', 'relpos.decay'] + [f'attention.{name}.{kind}' for name in
                                            ('q_proj', 'k_proj', 'v_proj', 'lepe.conv', 'out_proj')
                                            for kind in ('weight', 'bias')])


@pytest.mark.parametrize('bad', [torch.randn(2, 16, 5, 5), torch.randn(32, 5, 5), torch.randn(1, 32, 5, 5, 1)])
def test_input_of_other_channels_or_rank_is_a_clear_error(bad):
    masa = ManhattanSelfAttention2d(32, 4)
    expected = f'ManhattanSelfAttention2d expects (N, 32, H, W) inputs (embed_dims=32), got {tuple(bad.shape)}.'
    with pytest.raises(ValueError, match=re.escape(expected)):
        masa(bad)


@pytest.mark.parametrize('kwargs,message', [
    (dict(embed_dims=36, num_heads=4), r'embed_dims / num_heads must be an even integer .*, got 36 / 4\.'),
    (dict(embed_dims=32, num_heads=5), r'embed_dims / num_heads must be an even integer .*, got 32 / 5\.'),
    (dict(embed_dims=0, num_heads=1), 'embed_dims must be an int >= 1, got 0'),
    (dict(embed_dims=32, num_heads=4, heads_range=-1), 'heads_range must be a finite number >= 0'),
    (dict(embed_dims=32, num_heads=4, impl='flash'), r"impl must be one of \('fast', 'flex', 'reference'\)"),
])
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=f'^ManhattanSelfAttention2d: {message}'):
        ManhattanSelfAttention2d(**kwargs)
    ManhattanSelfAttention2d(30, 5)  # 6 channels a head: fine


def test_registered_and_on_the_package_face():
    assert mmrmt.ManhattanSelfAttention2d is ManhattanSelfAttention2d
    for registry in (DET_MODELS, SEG_MODELS):
        masa = registry.build(dict(type='ManhattanSelfAttention2d', embed_dims=16, num_heads=2, decomposed=True))
        assert isinstance(masa, ManhattanSelfAttention2d) and masa.attention.decomposed


def test_documented_example_runs():
    assert doctest.testmod(masa_2d, raise_on_error=True).attempted == 4


@pytest.mark.parametrize('shape', [(2, 32, 0, 5), (2, 32, 5, 0), (0, 32, 5, 5)])
@pytest.mark.parametrize('impl', ['fast', 'reference'])
def test_an_empty_map_is_refused_as_the_backbones_refuse_it(shape, impl):
    with pytest.raises(ValueError) as error:
        ManhattanSelfAttention2d(32, 4, impl=impl)(torch.randn(shape))
    assert str(error.value) == (f'ManhattanSelfAttention2d: the input {shape} is empty; pass at least one image '
                                'of at least 1x1 pixels (an empty batch is refused, not passed through).')


@pytest.mark.parametrize('dtype,message', [
    (torch.float16, 'the input dtype torch.float16 differs from the model dtype torch.float32; convert one to '
     'the other (x.to(torch.float32) or model.to(torch.float16)) or run under torch.autocast.'),
    (torch.float64, 'the input dtype torch.float64 differs from the model dtype torch.float32; convert one to '
     'the other (x.to(torch.float32) or model.to(torch.float64)) or run under torch.autocast.'),
    (torch.int64, 'the input dtype torch.int64 is not floating point; convert the images first, e.g. x.float() '
     '(normalised as the data preprocessor does).'),
])
def test_an_input_of_another_dtype_is_refused_as_the_backbones_refuse_it(dtype, message):
    with pytest.raises(TypeError) as error:
        ManhattanSelfAttention2d(32, 4)(torch.ones(1, 32, 4, 4, dtype=dtype))
    assert str(error.value) == f'ManhattanSelfAttention2d: {message}'
