"""Upstream RMT checkpoints (ImageNet classifier, mmdet 2.x / mmseg 0.x
detector or segmentor) to the :class:`~mmrmt.models.backbones.RMT` backbone."""
from typing import Dict, List, Tuple

import torch

from mmrmt.checkpoint import extract_state_dict
from .arch import match_arch, stage_depths
from .rmt import RMT

StateDict = Dict[str, torch.Tensor]


def rmt_upstream_to_mmrmt(state_dict: StateDict) -> StateDict:
    """An upstream RMT file (ImageNet classifier, or an mmdet 2.x/mmseg 0.x
    detector or segmentor holding it under ``backbone.``) to the RMT backbone.

    Detector/segmentor parts other than the backbone and the classifier
    (``RMT.dropped_checkpoint_prefixes``) are left out. The output norms
    (``extra_norms.*``) of a detection file are kept.

    Raises:
        ValueError: The file holds no RMT backbone.
    """
    if any(key.startswith('backbone.') for key in state_dict):
        state_dict = extract_state_dict(state_dict, prefix='backbone.')
    backbone = {key: value for key, value in state_dict.items()
                if not key.startswith(RMT.dropped_checkpoint_prefixes)}
    if 'patch_embed.proj.0.weight' not in backbone or not any(key.startswith('layers.') for key in backbone):
        raise ValueError('not an RMT checkpoint: expected the keys patch_embed.proj.* and layers.* '
                         '(at the top level or under backbone.)')
    return backbone


def rmt_arch(state_dict: StateDict) -> Tuple[str, List[int], List[int]]:
    """The RMT variant whose shapes a converted state dict has, with its dims and depths."""
    depths = stage_depths(state_dict, r'layers\.(\d+)\.blocks\.(\d+)\.')
    dims = [state_dict[f'layers.{i}.blocks.0.retention_layer_norm.weight'].shape[0]
            for i in range(len(depths))]
    return match_arch(RMT.arch_zoo, dims, depths, 'RMT'), dims, depths
