"""tools/model_converters on checkpoints our tools/train.py wrote and on the authors' detectron2 file, as a user
runs them; they never run the saved config's text and never destroy a file (every layout and refusal of their
shared flow: tests/test_utils/test_conversion.py)."""
from pathlib import Path

import pytest
import torch

from mmrmt.checkpoint import read_saved_config
from mmrmt.models.backbones import RMT, ResT
from helpers.code_in_checkpoint import with_code_in_saved_config
from helpers.tool_modules import exit_line, import_tool
from helpers.upstream_layouts import assert_backbone_file_loads, random_upstream_state_dict
from tool_process import REPO, load_checkpoint, run_script

rest_detectron2_to_mmrmt = import_tool('tools/model_converters/rest_detectron2_to_mmrmt.py')
rmt_to_mmrmt = import_tool('tools/model_converters/rmt_to_mmrmt.py')


def trained_backbone(checkpoint: Path) -> dict:
    return {key[len('backbone.'):]: value for key, value in load_checkpoint(checkpoint)['state_dict'].items()
            if key.startswith('backbone.')}


def test_training_checkpoint_gives_its_backbone(det_work_dir, tmp_path):
    """A checkpoint of our tools/train.py (mmengine's layout, a custom arch)."""
    rmt_to_mmrmt.main([str(det_work_dir / 'iter_4.pth'), str(tmp_path / 'out.pth')])
    saved = torch.load(tmp_path / 'out.pth', weights_only=True)
    assert saved['meta']['arch']['embed_dims'] == [16, 32, 64, 64]
    backbone = trained_backbone(det_work_dir / 'iter_4.pth')
    assert set(saved['state_dict']) == set(backbone)
    assert_backbone_file_loads(RMT, saved['meta']['arch'], tmp_path / 'out.pth', backbone)


def test_training_checkpoint_loads_as_backbone_init(det_work_dir):
    arch = read_saved_config(load_checkpoint(det_work_dir / 'iter_4.pth')['meta']['cfg'])['model']['backbone']['arch']
    backbone = RMT(arch=arch, init_cfg=dict(type='Pretrained', prefix='backbone.',
                                            checkpoint=str(det_work_dir / 'iter_4.pth')))
    backbone.init_weights()
    own = backbone.state_dict()
    assert all(torch.equal(own[key], value) for key, value in trained_backbone(det_work_dir / 'iter_4.pth').items())


def test_rest_detectron2_file(tmp_path):
    classifier = random_upstream_state_dict('rest-small')
    backbone = {key: value for key, value in classifier.items() if not key.startswith('head.')}
    norms = {f'norm{i + 1}.{name}': torch.rand(channels)
             for i, channels in enumerate((64, 128, 256)) for name in ('weight', 'bias')}
    detector = {f'backbone.bottom_up.{key}': value for key, value in {**backbone, **norms}.items()}
    detector.update({'backbone.fpn_lateral2.weight': torch.rand(256, 64, 1, 1),
                     'roi_heads.box_predictor.cls_score.weight': torch.rand(81, 1024)})
    torch.save({'model': detector, 'iteration': 90000}, tmp_path / 'mask_rcnn_rest_small.pth')
    rest_detectron2_to_mmrmt.main([str(tmp_path / 'mask_rcnn_rest_small.pth'), str(tmp_path / 'out.pth')])
    saved = torch.load(tmp_path / 'out.pth', weights_only=True)
    assert saved['meta']['arch'] == 'small'
    expected = dict(backbone)
    expected.update({key.replace(f'norm{i}.', f'extra_norms.{i - 1}.'): value
                     for key, value in norms.items() for i in (1, 2, 3) if key.startswith(f'norm{i}.')})
    assert set(saved['state_dict']) == set(expected)
    assert_backbone_file_loads(ResT, 'small', tmp_path / 'out.pth', expected)


def test_refusal_exits_non_zero_in_a_subprocess(tmp_path):
    source, destination = tmp_path / 'rmt_t3.pth', tmp_path / 'out.pth'
    torch.save({'model': random_upstream_state_dict('rmt-t')}, source)
    destination.write_bytes(b'the user\'s file')
    result = run_script(REPO / 'tools' / 'model_converters' / 'rmt_to_mmrmt.py', [source, destination], fresh=True)
    assert result.returncode == 1
    assert result.stderr.strip().startswith(f'error: destination {destination} exists')
    assert destination.read_bytes() == b'the user\'s file'


@pytest.mark.parametrize('converter', [rmt_to_mmrmt, rest_detectron2_to_mmrmt])
def test_the_saved_config_of_a_training_checkpoint_is_never_run(converter, det_work_dir, tmp_path):
    marker, source = tmp_path / 'PWNED', tmp_path / 'iter_4.pth'
    torch.save(with_code_in_saved_config(load_checkpoint(det_work_dir / 'iter_4.pth'), marker), source)
    message = exit_line(converter.main, [source, tmp_path / 'out.pth'])
    assert message == (f'error: the config saved in {source} (meta.cfg) is not plain data, so it was not read '
                       "(nor run): line 1: the operator '.' is not part of a literal; mmengine writes only literals "
                       'there: use a checkpoint from a source you trust')
    assert not marker.exists() and not (tmp_path / 'out.pth').exists()
