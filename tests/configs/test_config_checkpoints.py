"""The configs' ``init_cfg`` loads the authors' ImageNet files into the backbone.

Synthetic files in the upstream layouts (RMT, ResT) and timm's (ResMLP)
stand in for the downloads, saved under the names the configs expect.
"""
from pathlib import Path

import pytest
import timm
import torch
from mmdet.registry import MODELS as MMDET_MODELS

from helpers.upstream_layouts import random_upstream_state_dict
from zoo_configs import CONFIG_DIR, load_config


def resmlp_12_timm_state_dict() -> dict:
    return timm.create_model('resmlp_12_224', pretrained=False).state_dict()


CASES = [
    ('rmt/mask-rcnn_rmt-t_fpn_1x_coco.py', lambda: random_upstream_state_dict('rmt-t'), 'model'),
    ('rest/mask-rcnn_rest-small_fpn_ms-1x_coco.py', lambda: random_upstream_state_dict('rest-small'), 'model'),
    ('resmlp/mask-rcnn_resmlp-12_fpn_1x_coco.py', resmlp_12_timm_state_dict, None),
]


@pytest.mark.parametrize('config, make_state_dict, wrapper', CASES, ids=[case[0] for case in CASES])
def test_init_cfg_loads_the_imagenet_file(config: str, make_state_dict, wrapper, tmp_path: Path,
                                          monkeypatch):
    cfg = load_config(CONFIG_DIR / config)
    checkpoint = Path(cfg.model.backbone.init_cfg.checkpoint)
    assert checkpoint.parent == Path('checkpoints')
    state_dict = make_state_dict()
    (tmp_path / 'checkpoints').mkdir()
    torch.save({wrapper: state_dict} if wrapper else state_dict, tmp_path / checkpoint)
    monkeypatch.chdir(tmp_path)  # the configs' paths are relative to the working directory
    backbone = MMDET_MODELS.build(cfg.model.backbone)
    backbone.init_weights()
    own = backbone.state_dict()
    not_in_file = [key for key in own if key not in state_dict]
    assert all(key.startswith(backbone.new_checkpoint_prefixes) for key in not_in_file), not_in_file
    for key in set(own) & set(state_dict):
        assert torch.equal(own[key], state_dict[key].to(own[key].dtype)), key
