"""tools/model_converters on synthetic checkpoints in the upstream layouts."""
import sys
from pathlib import Path

import pytest
import torch
from helpers.upstream_layouts import random_upstream_state_dict

from mmrmt.models.backbones import RMT, ResT

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'tools' / 'model_converters'))
import rest_detectron2_to_mmrmt  # noqa: E402
import rmt_to_mmrmt  # noqa: E402


def load_with_init_cfg(backbone_cls, arch: str, path: Path) -> torch.nn.Module:
    backbone = backbone_cls(arch=arch, init_cfg=dict(type='Pretrained', checkpoint=str(path)))
    backbone.init_weights()
    return backbone


def assert_loaded(backbone: torch.nn.Module, expected: dict) -> None:
    own = backbone.state_dict()
    for key, value in expected.items():
        assert torch.equal(own[key], value.to(own[key].dtype)), key


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
    with pytest.raises(ValueError, match='not an RMT checkpoint'):
        rmt_to_mmrmt.main([str(tmp_path / 'resnet.pth'), str(tmp_path / 'out.pth')])
    assert not (tmp_path / 'out.pth').exists()


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
    with pytest.raises(ValueError, match='backbone.bottom_up'):
        rest_detectron2_to_mmrmt.main([str(tmp_path / 'rest_small.pth'), str(tmp_path / 'out.pth')])
