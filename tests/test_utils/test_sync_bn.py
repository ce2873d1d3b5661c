"""revert_sync_bn_when_single: SyncBN becomes BN unless distributed on CUDA."""
import pytest
import torch
from mmengine.config import Config
from torch import nn

from mmrmt.utils import revert_sync_bn_when_single


def sync_bn_config(launcher: str = 'none') -> Config:
    norm = dict(type='SyncBN', requires_grad=True)
    return Config(dict(
        launcher=launcher,
        model=dict(backbone=dict(type='RMT', norm_cfg=norm),
                   decode_head=dict(norm_cfg=dict(norm)),
                   heads=[dict(norm_cfg=dict(type='MMSyncBN')), dict(norm_cfg=dict(type='GN'))])))


def test_config_single_process_gets_plain_bn():
    cfg = revert_sync_bn_when_single(sync_bn_config())
    assert cfg.model.backbone.norm_cfg == dict(type='BN', requires_grad=True)
    assert cfg.model.decode_head.norm_cfg.type == 'BN'
    assert [head['norm_cfg']['type'] for head in cfg.model.heads] == ['BN', 'GN']


def test_config_distributed_keeps_sync_bn_only_with_cuda():
    cfg = revert_sync_bn_when_single(sync_bn_config(launcher='pytorch'))
    expected = 'SyncBN' if torch.cuda.is_available() else 'BN'
    assert cfg.model.backbone.norm_cfg.type == expected
    assert revert_sync_bn_when_single(sync_bn_config(), distributed=False).model.backbone.norm_cfg.type == 'BN'


def test_model_sync_bn_layers_are_converted():
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.SyncBatchNorm(4))
    model[1].running_mean.fill_(0.5)
    reverted = revert_sync_bn_when_single(model)
    assert not any(isinstance(m, nn.SyncBatchNorm) for m in reverted.modules())
    assert isinstance(reverted[1], nn.modules.batchnorm._BatchNorm)
    assert torch.equal(reverted[1].running_mean, torch.full((4, ), 0.5))
    reverted(torch.randn(2, 3, 5, 5))  # runs on the CPU


def test_rejects_other_types():
    with pytest.raises(TypeError, match='Config or an nn.Module'):
        revert_sync_bn_when_single(dict(model=dict()))
