"""The models and inputs a benchmark worker builds: a backbone, a config's whole model, the authors' ResT
with the same weights, synthetic data samples and the tensor-mode inputs of the --onnx contenders."""
import argparse
from pathlib import Path
from typing import Optional, Tuple

import numpy as np
import torch

from mmrmt.deployment.export import random_proposals
from mmrmt.models import backbones
from mmrmt.utils import build_seeded_model, read_config
from mmrmt.utils.model_kind import config_scope
from .contenders import backbone_type, parse_backbone, takes_impl
from .upstream_rest import load_upstream_module

#: Proposals given to two-stage detectors in tensor mode (the RPN's test-time count).
TENSOR_MODE_PROPOSALS = 1000


def build_backbone(name: str, impl: Optional[str], weights: Optional[str] = None) -> torch.nn.Module:
    """The backbone TYPE-ARCH; ``weights``: an upstream-layout checkpoint it loads (random init otherwise).

    The core's class of that name; ``impl`` is the backbone's (ResMLP's one implementation is 'fast' or None).
    """
    backbone, arch = parse_backbone(name)
    options = dict(arch=arch)
    if impl is not None and takes_impl(backbone):
        options['impl'] = impl
    if weights is not None:
        options['init_cfg'] = dict(type='Pretrained', checkpoint=weights)
    model = getattr(backbones, backbone)(**options)
    if weights is not None:
        model.init_weights()
    return model


def save_upstream_weights(args: argparse.Namespace, directory: str) -> str:
    """Build the authors' model once (seed 0) and save its state dict for every worker; return the path."""
    torch.manual_seed(0)
    arch = args.backbone.lower().partition('-')[2]
    factory = getattr(load_upstream_module(args.upstream_repo), f'rest_{arch}', None)
    if factory is None:
        raise ValueError(f'--upstream-repo: the authors\' code has no rest_{arch}; the variants are lite, small, '
                         'base, large.')
    path = str(Path(directory) / f'upstream_rest_{arch}.pth')
    torch.save({'model': factory().state_dict()}, path)
    return path


def build_whole_model(config: str, impl: Optional[str]) -> Tuple[torch.nn.Module, str]:
    """A config's model with ``impl`` (its backbone's), and its scope ('mmdet' or 'mmseg').

    Its weights are the initialised ones of seed :data:`~mmrmt.utils.INIT_SEED`, those
    tools/deployment/pytorch2onnx.py exports without --weights, so that an --onnx file's outputs are
    compared with the torch model's own.
    """
    cfg = read_config(config)
    scope = config_scope(cfg, config)
    if impl is not None and takes_impl(backbone_type(cfg)):  # ResMLP's one implementation: 'fast' or None
        cfg.model.backbone.impl = impl
    cfg.model.backbone.pop('init_cfg', None)  # initialised weights: no download, same speed
    return build_seeded_model(cfg), scope


def synthetic_samples(scope: str, batch: int, shape: Tuple[int, int], device: str) -> list:
    """Data samples with a few random boxes and masks, or a label map, per image.

    Every label is class 0, which every model has; values do not change the cost.
    mmdet's or mmseg's structures are imported by ``scope`` (either may be the one installed).
    """
    height, width = shape
    meta = dict(img_shape=shape, ori_shape=shape, pad_shape=shape, batch_input_shape=shape,
                scale_factor=(1.0, 1.0))
    generator = torch.Generator().manual_seed(0)
    samples = []
    for _ in range(batch):
        if scope == 'mmdet':
            from mmdet.structures import DetDataSample
            from mmdet.structures.mask import BitmapMasks
            from mmengine.structures import InstanceData
            corners = torch.rand(5, 2, 2, generator=generator) * torch.tensor([width, height])
            boxes = torch.cat((corners.min(1).values, corners.max(1).values + 8), 1)
            masks = np.zeros((5, height, width), dtype=np.uint8)
            for mask, (x0, y0, x1, y1) in zip(masks, boxes.int().tolist()):
                mask[y0:y1, x0:x1] = 1
            sample = DetDataSample(metainfo=meta)
            sample.gt_instances = InstanceData(
                bboxes=boxes, labels=torch.zeros(5, dtype=torch.long),
                masks=BitmapMasks(masks, height, width))
        else:
            from mmengine.structures import PixelData
            from mmseg.structures import SegDataSample
            sample = SegDataSample(metainfo=meta)
            sample.gt_sem_seg = PixelData(data=torch.zeros(1, height, width, dtype=torch.long))
        samples.append(sample.to(device))
    return samples


def tensor_mode_inputs(args: argparse.Namespace, two_stage: bool) -> Tuple[torch.Tensor, ...]:
    """The images (and proposals) every --onnx contender runs on, alike in every worker."""
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(args.batch, 3, *args.shape, generator=generator)
    if not two_stage:
        return (images, )
    return images, random_proposals(TENSOR_MODE_PROPOSALS, *args.shape, generator)
