"""The RMT backbone: parameter counts, checkpoint loading, output norms, freezing.

What all three backbones share is tested in test_backbone_contract.py, the
upstream exactness in test_upstream_golden.py.
"""
import pytest
import torch

from mmrmt.models import RMT
from helpers.backbone_checks import batch_norms
from helpers.backbones import RMT_TINY as TINY
from helpers.checkpoints import init_and_capture_summary, pretrained, save
from helpers.upstream_layouts import random_upstream_state_dict, upstream_param_count


def params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize('arch,expected', [('t', 12_783_776), ('s', 25_416_800),
                                           ('b', 52_604_680), ('l', 93_784_280)])
def test_parameter_counts_equal_upstream_detection_backbones(arch, expected):
    model = RMT(arch)
    assert params(model) == expected
    # ... which is the upstream classifier without its head plus four output norms.
    classifier_free = upstream_param_count(f'rmt-{arch}', without=RMT.dropped_checkpoint_prefixes)
    assert expected == classifier_free + 2 * sum(model.embed_dims)


def test_arch_aliases_and_custom_dict():
    assert RMT('tiny').embed_dims == RMT('T').embed_dims == [64, 128, 256, 512]
    assert RMT(TINY).embed_dims == TINY['embed_dims']


def test_out_indices_select_stages():
    model = RMT(TINY, out_indices=(1, 3)).eval()
    outputs = model(torch.randn(1, 3, 64, 64))
    assert [o.shape[1] for o in outputs] == [32, 64]
    assert sorted(model.extra_norms.keys()) == ['1', '3']


# each builds RMT-T: the fast tier keeps the authors' own wrapping (tests/test_checkpoint/test_reading.py
# unwraps every one)
@pytest.mark.parametrize('wrap', ['model', *(pytest.param(wrap, marks=pytest.mark.slow)
                                             for wrap in ('state_dict', 'model_ema', 'module', 'bare'))])
def test_upstream_imagenet_checkpoint_loads_with_only_new_norms_missing(tmp_path, wrap):
    upstream = random_upstream_state_dict('rmt-t')
    if wrap == 'module':
        content = {'model': {f'module.{k}': v for k, v in upstream.items()}}
    elif wrap == 'bare':
        content = upstream
    else:
        content = {wrap: upstream, 'epoch': 300}
    path = save(content, tmp_path / 'rmt_t.pth')
    model, summary = init_and_capture_summary(RMT('t', init_cfg=pretrained(path)))
    state = model.state_dict()
    for key, value in upstream.items():
        if key.startswith(RMT.dropped_checkpoint_prefixes):
            continue
        assert torch.equal(state[key], value), key
    for index in range(4):
        assert f'extra_norms.{index}.weight' in summary
    assert 'head.weight' in summary and 'proj.weight' in summary
    assert 'layers.0' not in summary


def test_shape_mismatch_names_the_key_and_shapes(tmp_path):
    upstream = random_upstream_state_dict('rmt-t')
    upstream['layers.0.blocks.0.ffn.fc1.weight'] = torch.zeros(100, 64)
    path = save({'model': upstream}, tmp_path / 'broken.pth')
    model = RMT('t', init_cfg=pretrained(path))
    with pytest.raises(ValueError, match=r'layers\.0\.blocks\.0\.ffn\.fc1\.weight: file \(100, 64\) '
                                         r'vs model \(192, 64\)'):
        model.init_weights()


def test_missing_and_foreign_files_fail_naming_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match='checkpoint not found: .*nowhere.pth'):
        RMT(TINY, init_cfg=pretrained(str(tmp_path / 'nowhere.pth'))).init_weights()
    text = tmp_path / 'notes.pth'
    text.write_text('not a checkpoint')
    with pytest.raises(ValueError, match='notes.pth is not a readable PyTorch checkpoint'):
        RMT(TINY, init_cfg=pretrained(str(text))).init_weights()
    tensor = save(torch.zeros(3), tmp_path / 'tensor.pth')
    with pytest.raises(ValueError, match='tensor.pth holds a Tensor, not a state dict'):
        RMT(TINY, init_cfg=pretrained(tensor)).init_weights()


def test_frozen_stages_stop_stem_and_first_stages():
    model = RMT(TINY, frozen_stages=2)
    model.train()
    frozen = [model.patch_embed, model.layers[0], model.layers[1], model.extra_norms['0'],
              model.extra_norms['1']]
    for module in frozen:
        assert all(not p.requires_grad for p in module.parameters())
        assert all(not bn.training for bn in batch_norms(module))
    for module in (model.layers[2], model.layers[3], model.extra_norms['2']):
        assert all(p.requires_grad for p in module.parameters())
    assert all(bn.training for bn in batch_norms(model.layers[2]))
    outputs = model(torch.randn(2, 3, 64, 64))
    sum(o.sum() for o in outputs).backward()
    assert all(p.grad is None for p in model.layers[0].parameters())
    assert all(p.grad is not None for p in model.layers[3].parameters())


def test_frozen_stem_only():
    model = RMT(TINY, frozen_stages=0).train()
    assert all(not p.requires_grad for p in model.patch_embed.parameters())
    assert all(p.requires_grad for p in model.layers[0].parameters())


@pytest.mark.slow  # builds RMT-S
def test_token_labelled_checkpoint_loads_with_its_aux_head_dropped(tmp_path):
    # The authors' RMT-S* (classification_token_label_release) is the ImageNet
    # layout plus a per-token classifier over the last stage's channels.
    upstream = random_upstream_state_dict('rmt-s')
    upstream['aux_head.weight'] = torch.rand(1000, 512)
    upstream['aux_head.bias'] = torch.rand(1000)
    path = save({'model': upstream}, tmp_path / 'rmt_s_token_label.pth')
    model, summary = init_and_capture_summary(RMT('s', init_cfg=pretrained(path)))
    state = model.state_dict()
    for key, value in upstream.items():
        if not key.startswith(RMT.dropped_checkpoint_prefixes):
            assert torch.equal(state[key], value), key
    assert 'aux_head.weight' in summary and 'aux_head.bias' in summary
    assert not any(key.startswith('aux_head') for key in state)
