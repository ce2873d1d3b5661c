"""The backbones' norm builder: mmcv's layers, names and arguments, without mmcv.cnn."""
import pytest
import torch
from mmcv.cnn import build_norm_layer as mmcv_build_norm_layer
from mmengine.model import revert_sync_batchnorm
from torch import nn

from mmrmt.models import RMT
from mmrmt.models.layers import NORM_LAYERS, build_norm_layer

CONFIGS = [
    dict(type='BN'),
    dict(type='BN', momentum=0.03, eps=1e-3),
    dict(type='SyncBN', requires_grad=True),
    dict(type='GN', num_groups=4),
    dict(type='LN'),
    dict(type='IN', affine=True),
]


@pytest.mark.parametrize('norm_cfg', CONFIGS, ids=lambda cfg: ','.join(f'{k}={v}' for k, v in cfg.items()))
def test_builds_the_layer_mmcv_builds(norm_cfg):
    torch.manual_seed(0)
    ours = build_norm_layer(norm_cfg, 8)
    theirs = mmcv_build_norm_layer(norm_cfg, 8)[1]
    assert isinstance(theirs, type(ours))
    assert repr(ours) == repr(theirs)
    assert {key: value.shape for key, value in ours.state_dict().items()} == \
        {key: value.shape for key, value in theirs.state_dict().items()}
    if not isinstance(ours, nn.SyncBatchNorm):  # SyncBN runs only in a process group
        x = torch.randn(2, 8, 5, 5) if not isinstance(ours, nn.LayerNorm) else torch.randn(2, 5, 5, 8)
        assert torch.equal(ours.train()(x), theirs.train()(x))


def test_sync_bn_is_torchs_and_reverts_to_batch_norm():
    layer = build_norm_layer(dict(type='SyncBN'), 8)
    assert type(layer) is nn.SyncBatchNorm
    reverted = revert_sync_batchnorm(nn.Sequential(layer))
    assert not isinstance(reverted[0], nn.SyncBatchNorm)
    reverted.train()(torch.randn(2, 8, 4, 4))  # a SyncBN would need a process group here


def test_requires_grad_false_freezes_the_parameters():
    layer = build_norm_layer(dict(type='BN', requires_grad=False), 8)
    assert [parameter.requires_grad for parameter in layer.parameters()] == [False, False]


def test_an_unknown_type_names_the_known_ones():
    with pytest.raises(ValueError, match=r"^norm_cfg type 'BatchNorm' is unknown: use one of BN, SyncBN, GN, "
                                         r'LN, IN\.$'):
        build_norm_layer(dict(type='BatchNorm'), 8)
    assert list(NORM_LAYERS) == ['BN', 'SyncBN', 'GN', 'LN', 'IN']


def test_a_backbone_refuses_an_unknown_type_by_its_name():
    with pytest.raises(ValueError, match=r"^RMT: norm_cfg type 'MMSyncBN' is unknown: use one of BN"):
        RMT('t', norm_cfg=dict(type='MMSyncBN'))


@pytest.mark.parametrize('norm_cfg, message', [
    (dict(type='GN'), r"GN needs num_groups, e\.g\. dict\(type='GN', num_groups=32\)"),
    (dict(type='BN', groups=2), r"norm_cfg \{'type': 'BN', 'groups': 2\}: .*unexpected keyword argument 'groups'"),
])
def test_missing_or_foreign_arguments_are_one_line(norm_cfg, message):
    with pytest.raises(TypeError, match=message):
        build_norm_layer(norm_cfg, 8)
