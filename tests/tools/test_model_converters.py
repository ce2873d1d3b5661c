"""tools/model_converters on synthetic checkpoints in the upstream layouts and
on checkpoints our tools/train.py wrote; they never destroy a file."""
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from mmrmt.checkpoint import read_saved_config
from mmrmt.models.backbones import RMT, ResT
from helpers.code_in_checkpoint import with_code_in_saved_config
from helpers.tool_modules import exit_line, import_tool
from helpers.upstream_layouts import random_upstream_state_dict
from tool_process import REPO, load_checkpoint, run_script

CONVERTERS = REPO / 'tools' / 'model_converters'
rest_detectron2_to_mmrmt = import_tool('tools/model_converters/rest_detectron2_to_mmrmt.py')
rmt_to_mmrmt = import_tool('tools/model_converters/rmt_to_mmrmt.py')


def load_with_init_cfg(backbone_cls, arch: str, path: Path) -> torch.nn.Module:
    backbone = backbone_cls(arch=arch, init_cfg=dict(type='Pretrained', checkpoint=str(path)))
    backbone.init_weights()
    return backbone


def assert_loaded(backbone: torch.nn.Module, expected: dict) -> None:
    own = backbone.state_dict()
    for key, value in expected.items():
        assert torch.equal(own[key], value.to(own[key].dtype)), key


def converter_error(converter, args) -> str:
    """Run a converter's main(); return the one line it exits with (status 1)."""
    return exit_line(converter.main, args)


def rmt_backbone_keys(classifier: dict) -> dict:
    """An RMT ImageNet state dict without its classifier."""
    return {key: value for key, value in classifier.items()
            if not key.startswith(('proj.', 'norm.', 'head.'))}


def test_rmt_classifier_file(tmp_path):
    classifier = random_upstream_state_dict('rmt-t')
    torch.save({'model': classifier}, tmp_path / 'rmt_t3.pth')
    rmt_to_mmrmt.main([str(tmp_path / 'rmt_t3.pth'), str(tmp_path / 'out.pth')])
    saved = torch.load(tmp_path / 'out.pth', weights_only=True)
    assert saved['meta']['arch'] == 't'
    assert not any(key.startswith(('proj.', 'norm.', 'head.')) for key in saved['state_dict'])
    assert_loaded(load_with_init_cfg(RMT, 't', tmp_path / 'out.pth'), rmt_backbone_keys(classifier))


def test_rmt_mmdet2_detector_file(tmp_path):
    backbone = rmt_backbone_keys(random_upstream_state_dict('rmt-t', seed=1))
    backbone.update({f'extra_norms.{i}.{name}': torch.rand(channels)
                     for i, channels in enumerate((64, 128, 256, 512)) for name in ('weight', 'bias')})
    detector = {f'backbone.{key}': value for key, value in backbone.items()}
    detector.update({'neck.lateral_convs.0.conv.weight': torch.rand(256, 64, 1, 1),
                     'roi_head.bbox_head.fc_cls.weight': torch.rand(81, 1024)})
    torch.save({'state_dict': detector, 'meta': {'epoch': 36}}, tmp_path / 'maskrcnn_t.pth')
    rmt_to_mmrmt.main([str(tmp_path / 'maskrcnn_t.pth'), str(tmp_path / 'out.pth')])
    saved = torch.load(tmp_path / 'out.pth', weights_only=True)['state_dict']
    assert set(saved) == set(backbone)
    assert_loaded(load_with_init_cfg(RMT, 't', tmp_path / 'out.pth'), backbone)


def test_rmt_converter_rejects_other_files(tmp_path):
    torch.save({'state_dict': {'conv1.weight': torch.rand(64, 3, 7, 7)}}, tmp_path / 'resnet.pth')
    message = converter_error(rmt_to_mmrmt, [tmp_path / 'resnet.pth', tmp_path / 'out.pth'])
    assert message.startswith('error: not an RMT checkpoint')
    assert not (tmp_path / 'out.pth').exists()
    assert [path.name for path in tmp_path.iterdir()] == ['resnet.pth'], 'a temporary file was left'


def test_rest_detectron2_file(tmp_path):
    classifier = random_upstream_state_dict('rest-small')
    backbone = {key: value for key, value in classifier.items() if not key.startswith('head.')}
    norms = {f'norm{i + 1}.{name}': torch.rand(channels)
             for i, channels in enumerate((64, 128, 256)) for name in ('weight', 'bias')}
    detector = {f'backbone.bottom_up.{key}': value for key, value in {**backbone, **norms}.items()}
    detector.update({'backbone.fpn_lateral2.weight': torch.rand(256, 64, 1, 1),
                     'roi_heads.box_predictor.cls_score.weight': torch.rand(81, 1024)})
    torch.save({'model': detector, 'iteration': 90000}, tmp_path / 'mask_rcnn_rest_small.pth')
    rest_detectron2_to_mmrmt.main([str(tmp_path / 'mask_rcnn_rest_small.pth'),
                                   str(tmp_path / 'out.pth')])
    saved = torch.load(tmp_path / 'out.pth', weights_only=True)
    assert saved['meta']['arch'] == 'small'
    expected = dict(backbone)
    expected.update({key.replace(f'norm{i}.', f'extra_norms.{i - 1}.'): value
                     for key, value in norms.items() for i in (1, 2, 3) if key.startswith(f'norm{i}.')})
    assert set(saved['state_dict']) == set(expected)
    assert_loaded(load_with_init_cfg(ResT, 'small', tmp_path / 'out.pth'), expected)


def test_rest_converter_rejects_a_classifier_file(tmp_path):
    torch.save({'model': random_upstream_state_dict('rest-small')}, tmp_path / 'rest_small.pth')
    message = converter_error(rest_detectron2_to_mmrmt,
                              [tmp_path / 'rest_small.pth', tmp_path / 'out.pth'])
    assert message == "error: not a ResT detectron2 checkpoint: no keys start with 'backbone.bottom_up.'"


def test_training_checkpoint_gives_its_backbone(det_work_dir, tmp_path):
    """A checkpoint of our tools/train.py (mmengine's layout, a custom arch)."""
    trained = load_checkpoint(det_work_dir / 'iter_4.pth')
    backbone = {key[len('backbone.'):]: value for key, value in trained['state_dict'].items()
                if key.startswith('backbone.')}
    rmt_to_mmrmt.main([str(det_work_dir / 'iter_4.pth'), str(tmp_path / 'out.pth')])
    saved = torch.load(tmp_path / 'out.pth', weights_only=True)
    assert saved['meta']['arch']['embed_dims'] == [16, 32, 64, 64]
    assert set(saved['state_dict']) == set(backbone)
    assert_loaded(load_with_init_cfg(RMT, saved['meta']['arch'], tmp_path / 'out.pth'), backbone)


def test_training_checkpoint_of_another_backbone_is_refused(det_work_dir, tmp_path):
    message = converter_error(rest_detectron2_to_mmrmt, [det_work_dir / 'iter_4.pth',
                                                         tmp_path / 'out.pth'])
    assert message == (f"error: {det_work_dir / 'iter_4.pth'} was trained with the backbone "
                       "'RMT', not ResT; use the converter of that backbone")
    assert not (tmp_path / 'out.pth').exists()


def test_training_checkpoint_loads_as_backbone_init(det_work_dir):
    trained = load_checkpoint(det_work_dir / 'iter_4.pth')
    arch = read_saved_config(trained['meta']['cfg'])['model']['backbone']['arch']
    backbone = RMT(arch=arch, init_cfg=dict(type='Pretrained', prefix='backbone.',
                                            checkpoint=str(det_work_dir / 'iter_4.pth')))
    backbone.init_weights()
    assert_loaded(backbone, {key[len('backbone.'):]: value
                             for key, value in trained['state_dict'].items()
                             if key.startswith('backbone.')})


@pytest.fixture
def rmt_source(tmp_path) -> Path:
    path = tmp_path / 'rmt_t3.pth'
    torch.save({'model': random_upstream_state_dict('rmt-t')}, path)
    return path


def assert_refused_and_untouched(args, expected: str, files) -> None:
    before = {path: path.read_bytes() for path in files}
    assert converter_error(rmt_to_mmrmt, args) == expected
    assert {path: path.read_bytes() for path in files} == before
    assert not list(Path(args[1]).parent.glob('.*.tmp')), 'a temporary file was left'


def test_invalid_source_leaves_the_destination(tmp_path):
    source, destination = tmp_path / 'notes.pth', tmp_path / 'out.pth'
    source.write_text('not a checkpoint')
    destination.write_bytes(b'the user\'s file')
    assert_refused_and_untouched(
        [source, destination, '--force'],
        f"error: {source} is not a readable PyTorch checkpoint: it is neither a zip archive nor "
        "a pickle (it starts with b'not a checkpoint')", [source, destination])


def test_existing_destination_needs_force(rmt_source, tmp_path):
    destination = tmp_path / 'out.pth'
    destination.write_bytes(b'the user\'s file')
    assert_refused_and_untouched(
        [rmt_source, destination],
        f'error: destination {destination} exists; choose another path, or add --force to '
        'replace it', [rmt_source, destination])
    rmt_to_mmrmt.main([str(rmt_source), str(destination), '--force'])
    assert torch.load(destination, weights_only=True)['meta']['arch'] == 't'


def test_refusal_exits_non_zero_in_a_subprocess(rmt_source, tmp_path):
    destination = tmp_path / 'out.pth'
    destination.write_bytes(b'the user\'s file')
    result = run_script(CONVERTERS / 'rmt_to_mmrmt.py', [rmt_source, destination], fresh=True)
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f'error: destination {destination} exists')
    assert destination.read_bytes() == b'the user\'s file'


@pytest.mark.parametrize('converter', [rmt_to_mmrmt, rest_detectron2_to_mmrmt])
def test_the_saved_config_of_a_training_checkpoint_is_never_run(converter, det_work_dir, tmp_path):
    marker, source = tmp_path / 'PWNED', tmp_path / 'iter_4.pth'
    torch.save(with_code_in_saved_config(load_checkpoint(det_work_dir / 'iter_4.pth'), marker), source)
    message = converter_error(converter, [source, tmp_path / 'out.pth'])
    assert message == (f'error: the config saved in {source} (meta.cfg) is not plain data, so it was not read '
                       "(nor run): line 1: the operator '.' is not part of a literal; mmengine writes only literals "
                       'there: use a checkpoint from a source you trust')
    assert not marker.exists() and not (tmp_path / 'out.pth').exists()


@pytest.mark.parametrize('suffix', ['.pth', '.safetensors'])
def test_a_source_of_integers_is_one_line(tmp_path, suffix):
    """(Every kind of number against every other: tests/test_checkpoint/test_dtype_fit.py.)"""
    classifier = {key: value.to(torch.int8) if value.is_floating_point() else value
                  for key, value in random_upstream_state_dict('rmt-t').items()}
    source = tmp_path / f'rmt_t_quantised{suffix}'
    if suffix == '.safetensors':
        save_file(classifier, str(source))
    else:
        torch.save({'model': classifier}, source)
    message = converter_error(rmt_to_mmrmt, [source, tmp_path / 'out.pth'])
    assert re.match(rf'error: the conversion of {re.escape(str(source))} does not load into RMT, so \S+out.pth was '
                    r'not written: \S+ does not fit RMT: \d+ tensors hold another kind of number than the model\'s '
                    r'\(\S+: file int8 vs model float32', message), message
    assert sorted(path.name for path in tmp_path.iterdir()) == [source.name]
