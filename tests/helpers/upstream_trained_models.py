"""Models of our configs holding trained-like weights, and their weights written in the authors' mmdet 2.x /
mmseg 0.x layouts (helpers/upstream_trained_layouts.py), for the tests of the upstream-trained conversion."""
from pathlib import Path

import torch
from mmengine.config import Config

from mmrmt.models.backbones import RMT
from mmrmt.utils import build_cpu_model
from helpers.upstream_trained_layouts import upstream_checkpoint, upstream_model_layout

MMDET2 = ('mmdet_version', '2.11.0')
MMSEG0 = ('mmseg_version', '0.13.0')


def dataset_classes(cfg: Config) -> tuple:
    """The classes of a config's test set (demo metainfo, or COCO / ADE20K)."""
    dataset = cfg.test_dataloader.dataset
    if dataset.get('metainfo'):
        return tuple(dataset.metainfo.classes)
    if cfg.default_scope == 'mmdet':
        from mmdet.datasets import CocoDataset
        return CocoDataset.METAINFO['classes']
    from mmseg.datasets import ADE20KDataset
    return ADE20KDataset.METAINFO['classes']


def rmt_arch(cfg: Config) -> dict:
    arch = cfg.model.backbone.arch
    return RMT.arch_zoo[arch] if isinstance(arch, str) else arch


def build_model(config: Path) -> torch.nn.Module:
    """The config's model in eval mode, detectors keeping 5 proposals (for speed)."""
    cfg = Config.fromfile(str(config))
    if cfg.model.get('rpn_head'):
        cfg.model.test_cfg.rpn.max_per_img = 5
    return build_cpu_model(cfg)


def trained_like_model(config: Path) -> torch.nn.Module:
    """The config's model with random BN statistics (as a trained model has)."""
    torch.manual_seed(0)
    model = build_model(config)
    for name, buffer in model.named_buffers():
        if name.endswith('running_mean'):
            buffer.normal_(0, 0.1)
        elif name.endswith('running_var'):
            buffer.uniform_(0.5, 1.5)
    return model


def write_upstream_file(model: torch.nn.Module, config: Path, version: tuple, path: Path) -> dict:
    """``model``'s weights in the upstream layout of ``config``'s model, saved to ``path``."""
    cfg = Config.fromfile(str(config))
    layout = upstream_model_layout(cfg.model, rmt_arch(cfg))
    checkpoint = upstream_checkpoint(layout, model.state_dict(), dataset_classes(cfg), version)
    torch.save(checkpoint, path)
    return checkpoint
