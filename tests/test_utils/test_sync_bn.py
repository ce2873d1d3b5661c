"""revert_sync_bn_when_single: SyncBN becomes BN unless distributed on CUDA."""
import torch
from mmengine.config import Config

from mmrmt.utils import revert_sync_bn_when_single


def sync_bn_config() -> Config:
    norm = dict(type='SyncBN', requires_grad=True)
    return Config(dict(
        model=dict(backbone=dict(type='RMT', norm_cfg=norm),
                   decode_head=dict(norm_cfg=dict(norm)),
                   heads=[dict(norm_cfg=dict(type='MMSyncBN')), dict(norm_cfg=dict(type='GN'))])))


def test_config_single_process_gets_plain_bn():
    cfg = revert_sync_bn_when_single(sync_bn_config(), distributed=False)
    assert cfg.model.backbone.norm_cfg == dict(type='BN', requires_grad=True)
    assert cfg.model.decode_head.norm_cfg.type == 'BN'
    assert [head['norm_cfg']['type'] for head in cfg.model.heads] == ['BN', 'GN']


def test_config_distributed_keeps_sync_bn_only_with_cuda():
    cfg = revert_sync_bn_when_single(sync_bn_config(), distributed=True)
    expected = 'SyncBN' if torch.cuda.is_available() else 'BN'
    assert cfg.model.backbone.norm_cfg.type == expected
    assert revert_sync_bn_when_single(sync_bn_config(), distributed=False).model.backbone.norm_cfg.type == 'BN'
