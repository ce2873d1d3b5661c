"""The authors' ImageNet files through timm: ``pretrained=True`` with
``pretrained_cfg_overlay=dict(file=...)`` loads a ``.pth`` (as the authors
save it) or a ``.safetensors`` whole and strictly, weights only; a file that
does not fit is one line naming it; ``features_only`` gives our pyramid."""
import argparse
import logging
import re

import pytest
import timm
import torch
from safetensors.torch import save_file

import mmrmt  # noqa: F401  (registers the timm models)
from mmrmt.models.backbones import RMT, ResT
from helpers.checkpoints import pretrained
from helpers.classifier_goldens import seeded_state_dict


def authors_file(tmp_path, variant: str, suffix: str = '.pth', seed: int = 0) -> str:
    """``variant``'s seeded float32 weights as the authors save them (``.pth``) or as safetensors."""
    state = {key: value.float() if value.is_floating_point() else value
             for key, value in seeded_state_dict(variant, seed).items()}
    path = str(tmp_path / f'{variant}{suffix}')
    if suffix == '.safetensors':
        save_file(state, path)
    else:  # their training script's checkpoint: the model, the optimizer's epoch, its argparse arguments
        torch.save(dict(model=state, epoch=299, args=argparse.Namespace(model=variant)), path)
    return path


def with_file(path: str, **kwargs) -> dict:
    return dict(pretrained=True, pretrained_cfg_overlay=dict(file=path), **kwargs)


@pytest.mark.parametrize('variant', ['rmt_t', 'rmt_s_tl', 'rest_lite'])
@pytest.mark.parametrize('suffix', ['.pth', '.safetensors'])
def test_the_authors_file_loads_whole_and_bit_exact(tmp_path, variant, suffix):
    path = authors_file(tmp_path, variant, suffix)
    model = timm.create_model(variant, **with_file(path))
    expected = seeded_state_dict(variant, 0)
    own = model.state_dict()
    assert sorted(own) == sorted(expected)
    assert all(torch.equal(own[key], value.to(own[key].dtype)) for key, value in expected.items())


def test_weights_are_read_without_timm_unpickler(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError('timm.models.load_state_dict called')

    monkeypatch.setattr(timm.models._builder, 'load_state_dict', refuse)
    timm.create_model('rest_lite', **with_file(authors_file(tmp_path, 'rest_lite')))


def test_another_class_count_keeps_the_trunk_and_a_new_head(tmp_path):
    path = authors_file(tmp_path, 'rmt_s_tl')
    model = timm.create_model('rmt_s_tl', num_classes=10, **with_file(path))
    expected = seeded_state_dict('rmt_s_tl', 0)
    assert model.head.weight.shape == (10, 1024) and model.aux_head.weight.shape == (10, 512)
    assert torch.equal(model.proj.weight, expected['proj.weight'].float())
    fc1 = 'layers.3.blocks.0.ffn.fc1.weight'
    assert torch.equal(model.state_dict()[fc1], expected[fc1].float())


@pytest.mark.parametrize('variant, file_variant, problem', [
    ('rmt_s', 'rmt_s_tl', r'2 unexpected keys \(aux_head\.bias, aux_head\.weight\)'),
    ('rmt_s_tl', 'rmt_s', r'2 missing keys \(aux_head\.bias, aux_head\.weight\)'),
    ('rmt_s', 'rmt_t', r'tensors differ in shape'),
    ('rest_small', 'rest_lite', r'missing keys \(stage3\.2\.'),
])
def test_a_file_of_another_variant_is_one_line(tmp_path, variant, file_variant, problem):
    path = authors_file(tmp_path, file_variant)
    expected = rf'^{re.escape(path)} does not fit \w+: .*{problem}.*check the model name'
    with pytest.raises(ValueError, match=expected) as error:
        timm.create_model(variant, **with_file(path))
    assert '\n' not in str(error.value)


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(FileNotFoundError, match=r'^checkpoint not found: .*nothing\.pth$'):
        timm.create_model('rmt_t', **with_file(str(tmp_path / 'nothing.pth')))


@pytest.mark.parametrize('variant, backbone_cls, arch', [('rmt_t', RMT, 't'), ('rmt_s_tl', RMT, 's'),
                                                         ('rest_lite', ResT, 'lite')])
def test_features_only_is_our_pyramid_before_its_output_norms(tmp_path, variant, backbone_cls, arch):
    """The same file through timm's features_only and through the mmdet backbone's init_cfg:
    the backbone's outputs are its output norms applied to timm's features, bit for bit."""
    path = authors_file(tmp_path, variant)
    features = timm.create_model(variant, features_only=True, **with_file(path)).eval()
    assert features.feature_info.channels() == list(backbone_cls.arch_zoo[arch]['embed_dims'])
    assert features.feature_info.reduction() == [4, 8, 16, 32]
    backbone = backbone_cls(arch=arch, init_cfg=pretrained(path))
    backbone.init_weights()
    backbone.eval()
    x = torch.randn(2, 3, 67, 93)
    with torch.no_grad():
        ours, pyramid = features(x), backbone(x)
        assert len(ours) == len(pyramid) == 4
        for stage, (feature, level) in enumerate(zip(ours, pyramid)):
            assert torch.equal(backbone.output_norm(stage)(feature.permute(0, 2, 3, 1)).permute(0, 3, 1, 2), level)


def file_of_dtype(tmp_path, variant: str, suffix: str, dtype: torch.dtype) -> str:
    """The authors' file of ``variant`` with its floating-point tensors in ``dtype`` (a quantised file's int8)."""
    state = {key: value.to(dtype) if value.is_floating_point() else value
             for key, value in seeded_state_dict(variant, 0).items()}
    path = str(tmp_path / f'{variant}_{str(dtype)[6:]}{suffix}')
    if suffix == '.safetensors':
        save_file(state, path)
    else:
        torch.save(dict(model=state), path)
    return path


@pytest.mark.parametrize('dtype', [torch.int8, torch.bool])
@pytest.mark.parametrize('suffix', ['.pth', '.safetensors'])
@pytest.mark.parametrize('way', ['file', 'checkpoint_path'])
def test_an_integer_or_boolean_file_is_one_line(tmp_path, dtype, suffix, way):
    """timm's pretrained_cfg_overlay=dict(file=...) and checkpoint_path= (which timm reads itself)."""
    path = file_of_dtype(tmp_path, 'rmt_t', suffix, dtype)
    source = re.escape(path) if way == 'file' else r'the weights loaded \(by timm\'s checkpoint_path='
    kwargs = with_file(path) if way == 'file' else dict(checkpoint_path=path)
    with pytest.raises(ValueError, match=rf'^{source}.* does not fit RMTClassifier: \d+ tensors hold another kind '
                                         rf'of number than the model\'s \(\S+: file {str(dtype)[6:]} vs model '
                                         r'float32') as error:
        timm.create_model('rmt_t', **kwargs)
    assert '\n' not in str(error.value)


@pytest.mark.parametrize('way', ['file', 'checkpoint_path'])
def test_a_half_precision_file_loads_and_is_said_once(tmp_path, way, caplog):
    path = file_of_dtype(tmp_path, 'rest_lite', '.safetensors', torch.float16)
    kwargs = with_file(path) if way == 'file' else dict(checkpoint_path=path)
    with caplog.at_level(logging.INFO, logger='mmrmt.checkpoint.fit'):
        model = timm.create_model('rest_lite', **kwargs)
    notes = [record.getMessage() for record in caplog.records if record.name == 'mmrmt.checkpoint.fit']
    assert len(notes) == 1 and re.search(r'into ResTClassifier: \d+ float16 tensors load as float32', notes[0])
    expected = seeded_state_dict('rest_lite', 0)['head.weight'].half().float()
    assert torch.equal(model.head.weight, expected)


@pytest.mark.parametrize('variant, origin', [('rmt_s', 'https://github.com/qhfan/RMT'),
                                             ('rest_lite', 'https://github.com/wofmanaf/ResT')])
def test_pretrained_without_a_file_says_where_the_files_are(variant, origin):
    with pytest.raises(ValueError) as error:
        timm.create_model(variant, pretrained=True)
    assert str(error.value) == (f"{variant}: timm has no download of the authors' ImageNet weights; take their file "
                                f'from {origin} (see docs/timm.md) and pass it: timm.create_model({variant!r}, '
                                "pretrained=True, pretrained_cfg_overlay=dict(file='PATH.pth'))")


@pytest.mark.parametrize('variant, first_conv', [('rmt_t', 'patch_embed.proj.0.weight'),
                                                 ('rest_lite', 'stem.conv1.weight')])
@pytest.mark.parametrize('in_chans', [1, 4])
def test_other_input_channels_adapt_the_first_conv_as_timm_does(tmp_path, variant, first_conv, in_chans):
    """timm's adapt_input_conv: one channel sums the RGB filters; more repeat them, scaled by 3 / in_chans."""
    path = authors_file(tmp_path, variant)
    model = timm.create_model(variant, in_chans=in_chans, **with_file(path))
    rgb = seeded_state_dict(variant, 0)[first_conv].float()
    expected = rgb.sum(1, keepdim=True) if in_chans == 1 else rgb[:, [0, 1, 2, 0]] * 3 / 4
    assert torch.allclose(model.state_dict()[first_conv], expected, rtol=1e-6, atol=1e-7)
    assert model(torch.randn(1, in_chans, 64, 64)).shape == (1, 1000)
    head = seeded_state_dict(variant, 0)['head.weight'].float()
    assert torch.equal(model.head.weight, head)
