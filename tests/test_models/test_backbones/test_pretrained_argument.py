"""``pretrained``, deprecated in mmdet's and mmseg's own backbones, in ours.

mmseg's segmentors hand their ``model.pretrained`` to the backbone, and
mmseg's ResNet bases set it to ``'open-mmlab://resnet50_v1c'``. A checkpoint
path becomes ``init_cfg`` (as mmseg's backbones do); a model-zoo name of
another network is refused in one line that says to set
``model.pretrained=None`` — whether it arrives as ``pretrained`` or as the
``init_cfg`` an mmdet ResNet base holds.
"""
import pytest
import torch
from mmengine.config import Config

from mmrmt.models import RMT, ResMLP, ResT
from helpers.backbones import RESMLP_TINY, REST_TINY, RMT_TINY
from helpers.checkpoints import pretrained, save

BACKBONES = [(RMT, RMT_TINY), (ResT, REST_TINY), (ResMLP, RESMLP_TINY)]
each_backbone = pytest.mark.parametrize('backbone,arch', BACKBONES, ids=lambda value: getattr(value, '__name__', ''))

MMSEG_UPERNET_R50 = 'mmseg::upernet/upernet_r50_4xb4-160k_ade20k-512x512.py'
MMDET_RETINANET_R50 = 'mmdet::retinanet/retinanet_r50_fpn_1x_coco.py'
REFUSAL = (r"is a checkpoint of another network \(the ResNet of an mmdet/mmseg base config\?\): set "
           r"model\.pretrained=None in your config and give the backbone its own checkpoint as "
           r"init_cfg=dict\(type='Pretrained', checkpoint=\.\.\.\)\.$")


def one_line(info: pytest.ExceptionInfo) -> str:
    message = str(info.value)
    assert '\n' not in message, message
    return message


@each_backbone
def test_a_checkpoint_path_becomes_init_cfg_and_loads(backbone, arch, tmp_path):
    path = save(backbone(arch).state_dict(), tmp_path / 'backbone.pth')
    with pytest.warns(DeprecationWarning, match=r"pretrained is deprecated, use init_cfg=dict\(type='Pretrained'"):
        model = backbone(arch, pretrained=path)
    assert model.init_cfg == pretrained(path)
    model.init_weights()
    assert all(torch.equal(value, saved) for value, saved in
               zip(model.state_dict().values(), torch.load(path, weights_only=True).values()))


@each_backbone
@pytest.mark.parametrize('zoo_name', ['open-mmlab://resnet50_v1c', 'torchvision://resnet50', 'mmcls://resnet50'])
def test_a_model_zoo_name_of_another_network_is_refused(backbone, arch, zoo_name):
    with pytest.raises(ValueError) as info:
        backbone(arch, pretrained=zoo_name)
    assert one_line(info).startswith(f'{backbone.__name__}: pretrained={zoo_name!r} is a checkpoint')
    with pytest.raises(ValueError, match=REFUSAL) as info:
        backbone(arch, init_cfg=pretrained(zoo_name))
    assert one_line(info).startswith(f"{backbone.__name__}: init_cfg['checkpoint']={zoo_name!r}")


@each_backbone
def test_pretrained_with_init_cfg_or_not_a_path_is_refused(backbone, arch):
    with pytest.raises(ValueError, match=r"pretrained='a\.pth' and init_cfg are both set: give the checkpoint "
                                         r'once, as init_cfg=.*and set model\.pretrained=None\.$') as info:
        backbone(arch, pretrained='a.pth', init_cfg=pretrained('b.pth'))
    one_line(info)
    for bad in (3, '', dict(type='Pretrained', checkpoint='a.pth')):
        with pytest.raises(TypeError, match=r'pretrained must be a checkpoint path or None, got '):
            backbone(arch, pretrained=bad)


def mmseg_upernet(tmp_path, **model) -> Config:
    """mmseg's own UperNet R-50 config with RMT-tiny for its ResNet (and ``model`` on top)."""
    config = tmp_path / 'upernet_rmt.py'
    config.write_text(
        f'_base_ = {MMSEG_UPERNET_R50!r}\n'
        'custom_imports = dict(imports=["mmrmt"], allow_failed_imports=False)\n'
        f'model = dict(backbone=dict(_delete_=True, type="RMT", arch={RMT_TINY!r}),\n'
        '             decode_head=dict(in_channels=[16, 32, 48, 64], channels=32),\n'
        f'             auxiliary_head=dict(in_channels=48, channels=16), **{model!r})\n')
    return Config.fromfile(str(config))


def build(cfg: Config) -> torch.nn.Module:
    from mmengine.registry import init_default_scope
    init_default_scope(cfg.default_scope)
    from mmdet.registry import MODELS as DET_MODELS
    from mmseg.registry import MODELS as SEG_MODELS
    return (SEG_MODELS if cfg.default_scope == 'mmseg' else DET_MODELS).build(cfg.model)


def test_mmseg_resnet_base_pretrained_is_refused_naming_the_fix(tmp_path):
    cfg = mmseg_upernet(tmp_path)
    assert cfg.model.pretrained == 'open-mmlab://resnet50_v1c'  # what the base sets for its ResNet
    with pytest.raises(ValueError, match="RMT: pretrained='open-mmlab://resnet50_v1c' " + REFUSAL) as info:
        build(cfg)
    one_line(info)


def test_mmseg_base_with_pretrained_none_builds_and_segments(tmp_path):
    model = build(mmseg_upernet(tmp_path, pretrained=None)).eval()
    assert type(model.backbone) is RMT and model.backbone.init_cfg is None
    with torch.no_grad():
        logits = model(torch.randn(1, 3, 64, 64), mode='tensor')
    assert logits.shape == (1, 150, 16, 16)


def test_mmseg_model_pretrained_path_reaches_the_backbone_as_init_cfg(tmp_path):
    with pytest.warns(DeprecationWarning):
        model = build(mmseg_upernet(tmp_path, pretrained='checkpoints/rmt-tiny.pth'))
    assert model.backbone.init_cfg == pretrained('checkpoints/rmt-tiny.pth')


def test_mmdet_base_builds_with_our_backbone_and_refuses_its_resnet_init_cfg(tmp_path):
    config = tmp_path / 'retinanet_rmt.py'
    config.write_text(
        f'_base_ = {MMDET_RETINANET_R50!r}\n'
        'custom_imports = dict(imports=["mmrmt"], allow_failed_imports=False)\n'
        f'model = dict(backbone=dict(_delete_=True, type="RMT", arch={RMT_TINY!r}),\n'
        '             neck=dict(in_channels=[16, 32, 48, 64]))\n')
    cfg = Config.fromfile(str(config))
    model = build(cfg).eval()
    with torch.no_grad():
        scores, _ = model(torch.randn(1, 3, 64, 64), mode='tensor')
    assert [level.shape[-1] for level in scores] == [8, 4, 2, 1, 1]
    # The init_cfg of the base's ResNet, kept beside our backbone by mistake:
    (tmp_path / 'base.py').write_text(f'_base_ = {MMDET_RETINANET_R50!r}\n')
    cfg.model.backbone.init_cfg = Config.fromfile(str(tmp_path / 'base.py')).model.backbone.init_cfg
    with pytest.raises(ValueError, match="RMT: init_cfg\\['checkpoint'\\]='torchvision://resnet50' " + REFUSAL):
        build(cfg)
