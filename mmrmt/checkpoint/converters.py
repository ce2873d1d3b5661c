"""Bring backbone weights stored in other layouts to mmrmt's keys.

Each converter takes an unwrapped state dict (see
:func:`~mmrmt.checkpoint.loading.extract_state_dict`) and returns the
backbone's weights under the keys mmrmt's backbone has, so that the result
loads through ``init_cfg=dict(type='Pretrained', checkpoint=...)``.
"""
import re
from typing import Dict, List, Tuple

import torch

StateDict = Dict[str, torch.Tensor]

RMT_CLASSIFIER_PREFIXES = ('proj.', 'norm.', 'head.')
DETECTRON2_BACKBONE_PREFIX = 'backbone.bottom_up.'


def _without_prefix(state_dict: StateDict, prefix: str) -> StateDict:
    return {key[len(prefix):]: value for key, value in state_dict.items() if key.startswith(prefix)}


def rmt_upstream_to_mmrmt(state_dict: StateDict) -> StateDict:
    """An upstream RMT file (ImageNet classifier, or an mmdet 2.x/mmseg 0.x
    detector or segmentor holding it under ``backbone.``) to the RMT backbone.

    Detector/segmentor parts other than the backbone and the classifier
    (``proj``, ``norm``, ``head``) are left out. The output norms
    (``extra_norms.*``) of a detection file are kept.

    Raises:
        ValueError: The file holds no RMT backbone.
    """
    if any(key.startswith('backbone.') for key in state_dict):
        state_dict = _without_prefix(state_dict, 'backbone.')
    backbone = {key: value for key, value in state_dict.items()
                if not key.startswith(RMT_CLASSIFIER_PREFIXES)}
    if 'patch_embed.proj.0.weight' not in backbone or not any(key.startswith('layers.') for key in backbone):
        raise ValueError('not an RMT checkpoint: expected the keys patch_embed.proj.* and layers.* '
                         '(at the top level or under backbone.)')
    return backbone


def rest_detectron2_to_mmrmt(state_dict: StateDict) -> StateDict:
    """A ResT detectron2 detector (``backbone.bottom_up.*``) to the ResT backbone.

    The detectron2 backbone names its output norms ``norm1``-``norm3`` (stage
    4 uses the final ``norm``); mmrmt calls them ``extra_norms.0``-``2``.
    FPN and head weights are left out.

    Raises:
        ValueError: The file has no ``backbone.bottom_up.`` weights.
    """
    backbone = _without_prefix(state_dict, DETECTRON2_BACKBONE_PREFIX)
    if not backbone:
        raise ValueError('not a ResT detectron2 checkpoint: no keys start with '
                         f'{DETECTRON2_BACKBONE_PREFIX!r}')
    renamed = {}
    for key, value in backbone.items():
        match = re.match(r'norm([123])\.(.*)', key)
        renamed[f'extra_norms.{int(match.group(1)) - 1}.{match.group(2)}' if match else key] = value
    return renamed


def stage_depths(state_dict: StateDict, block_key: str) -> List[int]:
    """Blocks per stage, from keys matching ``block_key`` (a regex with the
    stage and block indices as its two groups)."""
    blocks: Dict[int, int] = {}
    for key in state_dict:
        match = re.match(block_key, key)
        if match:
            stage, block = int(match.group(1)), int(match.group(2))
            blocks[stage] = max(blocks.get(stage, 0), block + 1)
    return [blocks[stage] for stage in sorted(blocks)]


def match_arch(arch_zoo: Dict[str, dict], embed_dims: List[int], depths: List[int], name: str) -> str:
    """The first name in ``arch_zoo`` with these ``embed_dims`` and ``depths``."""
    for arch, settings in arch_zoo.items():
        if list(settings['embed_dims']) == embed_dims and list(settings['depths']) == depths:
            return arch
    raise ValueError(f'{name}: no variant has embed_dims={embed_dims} and depths={depths}')


def rmt_arch(state_dict: StateDict) -> Tuple[str, List[int], List[int]]:
    """The RMT variant whose shapes a converted state dict has."""
    from mmrmt.models.backbones.rmt import RMT
    depths = stage_depths(state_dict, r'layers\.(\d+)\.blocks\.(\d+)\.')
    dims = [state_dict[f'layers.{i}.blocks.0.retention_layer_norm.weight'].shape[0]
            for i in range(len(depths))]
    return match_arch(RMT.arch_zoo, dims, depths, 'RMT'), dims, depths


def rest_arch(state_dict: StateDict) -> Tuple[str, List[int], List[int]]:
    """The ResT variant whose shapes a converted state dict has."""
    from mmrmt.models.backbones.rest import ResT
    depths = stage_depths(state_dict, r'stage(\d+)\.(\d+)\.')
    dims = [state_dict[f'stage{i + 1}.0.norm1.weight'].shape[0] for i in range(len(depths))]
    return match_arch(ResT.arch_zoo, dims, depths, 'ResT'), dims, depths
