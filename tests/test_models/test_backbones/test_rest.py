"""The ResT backbone: layouts and parameter counts, drop path, output norms,
checkpoint loading, freezing.

What all three backbones share is tested in test_backbone_contract.py, the
upstream exactness in test_upstream_golden.py.
"""
import math

import pytest
import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from mmrmt.models import ResT
from helpers.backbone_checks import batch_norms
from helpers.backbones import REST_TINY as TINY
from helpers.checkpoints import init_and_capture_summary, pretrained, save
from helpers.rounding import assert_close, two_implementations
from helpers.upstream_layouts import random_upstream_state_dict, upstream_layouts, upstream_param_count

VARIANTS = ('lite', 'small', 'base', 'large')


@pytest.mark.parametrize('variant', VARIANTS)
def test_layout_and_parameter_count_equal_upstream_without_head_plus_output_norms(variant):
    with torch.device('meta'):
        model = ResT(variant)
    upstream = upstream_layouts()[f'rest-{variant}']
    ours = {key: tuple(value.shape) for key, value in model.state_dict().items()}
    assert {k: v for k, v in ours.items() if not k.startswith('extra_norms.')} == \
        {k: v for k, v in upstream.items() if not k.startswith('head.')}
    # Stages 1-3 get new output norms; stage 4 reuses the checkpoint's final ``norm``.
    expected = upstream_param_count(f'rest-{variant}', without=('head.', )) + 2 * sum(model.embed_dims[:3])
    assert sum(p.numel() for p in model.parameters()) == expected


@pytest.mark.parametrize('variant,rate', [('lite', 0.1), ('small', 0.1), ('base', 0.2), ('large', 0.2)])
def test_drop_path_defaults_to_the_detection_setting_of_the_variant(variant, rate):
    with torch.device('meta'):
        default, given = ResT(variant), ResT(variant, drop_path_rate=0.3)
    assert default.stage1[0].drop_path.__class__ is nn.Identity  # the rate rises from 0
    # the last of a float32 linspace to the rate: its step and sum rounded, the rate itself too
    linspace = two_implementations(torch.float32, 1, 3)
    assert default.stage4[-1].drop_path.drop_prob == pytest.approx(rate, rel=linspace)
    assert given.stage4[-1].drop_path.drop_prob == pytest.approx(0.3, rel=linspace)


def test_output_norms_are_emitted_only_and_the_last_is_the_final_norm():
    torch.manual_seed(0)
    model = ResT(TINY).eval()
    assert sorted(model.extra_norms.keys()) == ['0', '1', '2']
    norms = [model.extra_norms['0'], model.extra_norms['1'], model.extra_norms['2'], model.norm]
    for norm in norms:
        nn.init.normal_(norm.weight)
        nn.init.normal_(norm.bias)
    image = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        emitted = model(image)
        model.extra_norms = nn.ModuleDict({key: nn.Identity() for key in model.extra_norms})
        model.norm = nn.Identity()
        raw = model(image)
    # Each emitted feature is its stage's raw output, normalised; had a norm fed
    # the next stage, the later raw outputs (computed without norms) would not fit.
    for norm, out, feature in zip(norms, emitted, raw):
        # one LayerNorm (mean, variance: 2 steps over the channels), maybe of another memory layout
        assert_close(out, norm(feature.permute(0, 2, 3, 1)).permute(0, 3, 1, 2),
                     two_implementations(torch.float32, feature.shape[1], 2))


def test_out_indices_select_stages_and_norms():
    model = ResT(TINY, out_indices=(1, 3)).eval()
    outputs = model(torch.randn(1, 3, 64, 64))
    assert [o.shape[1] for o in outputs] == [32, 64]
    assert sorted(model.extra_norms.keys()) == ['1']
    assert ResT(TINY, out_indices=(-1, )).out_indices == (3, )


def test_early_stages_only_do_not_run_later_ones():
    model = ResT(TINY, out_indices=(0, 1))
    outputs = model(torch.randn(1, 3, 32, 32))
    sum(o.sum() for o in outputs).backward()
    assert all(p.grad is None for p in model.stage3.parameters())
    assert all(p.grad is not None for p in model.stage2.parameters())


def test_single_head_and_one_token_attention_follow_upstream_rules():
    model = ResT(TINY)
    # One head: no head mixing (as upstream); sr_ratio 1: no grid reduction.
    assert not hasattr(model.stage1[0].attn, 'transform_conv')
    assert hasattr(model.stage2[0].attn, 'transform_conv')
    assert not hasattr(model.stage4[0].attn, 'sr')
    # A one-key, one-query grid instance-normalises to zero (nn.InstanceNorm2d raises).
    attn = model.stage4[0].attn
    out = attn(torch.randn(2, 1, 1, 64))
    assert torch.equal(out, attn.proj.bias.expand(2, 1, 1, 64))  # exact: x - mean(x) is 0 for one element


def test_upstream_imagenet_checkpoint_loads_with_only_new_norms_missing(tmp_path):
    upstream = random_upstream_state_dict('rest-lite')
    path = save({'model': upstream, 'epoch': 300}, tmp_path / 'rest_lite.pth')
    model, summary = init_and_capture_summary(ResT('lite', init_cfg=pretrained(path)))
    state = model.state_dict()
    for key, value in upstream.items():
        if not key.startswith('head.'):
            assert torch.equal(state[key], value), key
    for key in model.extra_norms:
        assert torch.equal(model.extra_norms[key].weight, torch.ones_like(model.extra_norms[key].weight))
    missing, unexpected = summary.split('unexpected keys')
    assert sorted(missing.split('[')[1].split(']')[0].replace("'", '').split(', ')) == sorted(
        f'extra_norms.{i}.{p}' for i in range(3) for p in ('weight', 'bias'))
    assert "['head.bias', 'head.weight']" in unexpected


def test_checkpoint_of_another_width_names_the_shapes(tmp_path):
    path = save({'model': random_upstream_state_dict('rest-base')}, tmp_path / 'rest_base.pth')
    with pytest.raises(ValueError, match=r'rest_base\.pth does not fit ResT: .*differ in shape '
                                         r'\(stem\.conv1\.weight: file \(48, 3, 3, 3\) vs model \(32, 3, 3, 3\)'):
        ResT('small', init_cfg=pretrained(path)).init_weights()


def test_initialisation_without_checkpoint():
    model = ResT(TINY)
    model.init_weights()
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert all(torch.equal(m.bias, torch.zeros_like(m.bias)) for m in linears)
    weights = torch.cat([m.weight.flatten() for m in linears])
    # truncated normal of std 0.02 (cut at +-2, i.e. 100 std: no effect): the sample std of
    # n draws has a standard error of std / sqrt(2 n); allow 6 of them
    assert abs(weights.std().item() - 0.02) < 6 * 0.02 / math.sqrt(2 * weights.numel())
    norms = [m for m in model.modules() if isinstance(m, (nn.LayerNorm, _BatchNorm))]
    assert all(torch.equal(m.weight, torch.ones_like(m.weight)) for m in norms)


def test_frozen_stages_stop_stem_and_first_stages_with_their_embeddings_and_norms():
    model = ResT(TINY, frozen_stages=2)
    model.train()
    frozen = [model.stem, model.stage1, model.patch_embed_2, model.stage2, model.extra_norms['0'],
              model.extra_norms['1']]
    for module in frozen:
        assert all(not p.requires_grad for p in module.parameters())
        assert all(not bn.training for bn in batch_norms(module))
    for module in (model.patch_embed_3, model.stage3, model.patch_embed_4, model.stage4,
                   model.extra_norms['2'], model.norm):
        assert all(p.requires_grad for p in module.parameters())
    assert all(bn.training for bn in batch_norms(model.patch_embed_3))
    outputs = model(torch.randn(2, 3, 64, 64))
    sum(o.sum() for o in outputs).backward()
    assert all(p.grad is None for p in model.stage1.parameters())
    assert all(p.grad is not None for p in model.stage4.parameters())


def _part(name: str) -> str:
    """The stage part a parameter belongs to: 'stem', 'stage2', 'extra_norms.1', ..."""
    parts = name.split('.')
    return '.'.join(parts[:2]) if parts[0] == 'extra_norms' else parts[0]


@pytest.mark.parametrize('frozen_stages', [-1, 0, 1, 3, 4])
def test_frozen_stages_freeze_exactly_the_leading_parts(frozen_stages):
    model = ResT(TINY, frozen_stages=frozen_stages).train()
    expected = {'stem'} if frozen_stages >= 0 else set()
    for i in range(frozen_stages):
        expected |= {f'stage{i + 1}', 'norm' if i == 3 else f'extra_norms.{i}'}
        if i > 0:
            expected.add(f'patch_embed_{i + 1}')
    frozen = {_part(name) for name, p in model.named_parameters() if not p.requires_grad}
    learning = {_part(name) for name, p in model.named_parameters() if p.requires_grad}
    assert frozen == expected
    assert not frozen & learning


def test_norm_cfg_sets_the_stem_and_embedding_norms():
    model = ResT(TINY, norm_cfg=dict(type='GN', num_groups=4))
    assert isinstance(model.stem.norm1, nn.GroupNorm) and isinstance(model.patch_embed_3.norm, nn.GroupNorm)
    assert model(torch.randn(1, 3, 32, 32))[0].shape == (1, 16, 8, 8)


def test_arch_names_and_custom_dict():
    with torch.device('meta'):
        assert ResT('Lite').embed_dims == [64, 128, 256, 512]
        assert [len(ResT('large').stage3), len(ResT('base').stage3)] == [18, 6]
    assert ResT(TINY).embed_dims == TINY['embed_dims']
    three_stages = ResT({key: value[:3] for key, value in TINY.items()}, out_indices=(0, 1, 2)).eval()
    assert [o.shape[1] for o in three_stages(torch.randn(1, 3, 32, 32))] == [16, 32, 48]
    assert not hasattr(three_stages, 'patch_embed_4')
