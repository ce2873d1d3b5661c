"""SyncBN becomes BN (replace_sync_bn_types) unless the run is distributed on CUDA (load_run_config)."""
import pytest
import torch
from mmengine.config import Config

from mmrmt.utils import load_run_config, replace_sync_bn_types

NORM = dict(type='SyncBN', requires_grad=True)
MODEL = dict(backbone=dict(type='RMT', norm_cfg=NORM), decode_head=dict(norm_cfg=dict(NORM)),
             heads=[dict(norm_cfg=dict(type='MMSyncBN')), dict(norm_cfg=dict(type='GN'))])


def test_config_single_process_gets_plain_bn():
    cfg = Config(dict(model=MODEL))
    replace_sync_bn_types(cfg.model)
    assert cfg.model.backbone.norm_cfg == dict(type='BN', requires_grad=True)
    assert cfg.model.decode_head.norm_cfg.type == 'BN'
    assert [head['norm_cfg']['type'] for head in cfg.model.heads] == ['BN', 'GN']


@pytest.mark.parametrize('launcher', ['none', 'pytorch'])
def test_a_run_keeps_sync_bn_only_distributed_with_cuda(tmp_path, launcher):
    config = tmp_path / 'run.py'
    config.write_text(f'model = {MODEL!r}\n')
    cfg = load_run_config(str(config), launcher=launcher, work_dir=str(tmp_path / 'work'))
    expected = 'SyncBN' if launcher == 'pytorch' and torch.cuda.is_available() else 'BN'
    assert cfg.model.backbone.norm_cfg.type == expected
    assert cfg.model.heads[0].norm_cfg.type == ('MMSyncBN' if expected == 'SyncBN' else 'BN')
