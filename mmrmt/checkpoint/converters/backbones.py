"""Upstream backbone files to the keys of mmrmt's backbones, and the variant a state dict holds."""
import re
from typing import Any, Dict, List, Mapping, Tuple

from ..reading import StateDict, extract_state_dict

DETECTRON2_BACKBONE_PREFIX = 'backbone.bottom_up.'
#: The ResMLP authors' names (their deit repository) -> timm's, replaced in every key.
DEIT_TO_TIMM_RENAMES = (('patch_embed.', 'stem.'), ('.attn.', '.linear_tokens.'),
                        ('.mlp.', '.mlp_channels.'), ('.gamma_', '.ls'))


def stage_depths(state_dict: Mapping[str, Any], block_key: str) -> List[int]:
    """Blocks per stage, from the keys matching ``block_key`` (a regex grouping the stage and block indices)."""
    blocks: Dict[int, int] = {}
    for key in state_dict:
        match = re.match(block_key, key)
        if match:
            stage, block = int(match.group(1)), int(match.group(2))
            blocks[stage] = max(blocks.get(stage, 0), block + 1)
    return [blocks[stage] for stage in sorted(blocks)]


def match_arch(arch_zoo: Mapping[str, Mapping[str, Any]], embed_dims: List[int], depths: List[int],
               backbone: str) -> str:
    """The first variant name in ``arch_zoo`` with these ``embed_dims`` and ``depths`` (else a ``ValueError``)."""
    for arch, settings in arch_zoo.items():
        if list(settings['embed_dims']) == embed_dims and list(settings['depths']) == depths:
            return arch
    raise ValueError(f'{backbone}: no variant has embed_dims={embed_dims} and depths={depths}')


def rmt_upstream_to_mmrmt(state_dict: StateDict) -> StateDict:
    """An upstream RMT file (ImageNet classifier, or an mmdet 2.x / mmseg 0.x model: its ``backbone.`` kept) to the
    RMT backbone, which keeps the upstream names; a ``ValueError`` when it holds no RMT backbone."""
    if any(key.startswith('backbone.') for key in state_dict):
        state_dict = extract_state_dict(state_dict, prefix='backbone.')
    if 'patch_embed.proj.0.weight' not in state_dict or not any(key.startswith('layers.') for key in state_dict):
        raise ValueError('not an RMT checkpoint: expected the keys patch_embed.proj.* and layers.* '
                         '(at the top level or under backbone.)')
    return state_dict


def rmt_widths_depths(state_dict: StateDict) -> Tuple[List[int], List[int]]:
    """Channels and blocks of each stage of an RMT backbone's state dict."""
    depths = stage_depths(state_dict, r'layers\.(\d+)\.blocks\.(\d+)\.')
    dims = [state_dict[f'layers.{i}.blocks.0.retention_layer_norm.weight'].shape[0]
            for i in range(len(depths))]
    return dims, depths


def rest_detectron2_to_mmrmt(state_dict: StateDict) -> StateDict:
    """A ResT detectron2 detector (the authors' COCO models) to the ResT backbone: ``backbone.bottom_up.normN``
    become ``extra_norms.N-1``, FPN and heads are left out; a ``ValueError`` without such keys."""
    if not any(key.startswith(DETECTRON2_BACKBONE_PREFIX) for key in state_dict):
        raise ValueError('not a ResT detectron2 checkpoint: no keys start with '
                         f'{DETECTRON2_BACKBONE_PREFIX!r}')
    renamed = {}
    for key, value in extract_state_dict(state_dict, prefix=DETECTRON2_BACKBONE_PREFIX).items():
        match = re.match(r'norm([123])\.(.*)', key)
        renamed[f'extra_norms.{int(match.group(1)) - 1}.{match.group(2)}' if match else key] = value
    return renamed


def rest_widths_depths(state_dict: StateDict) -> Tuple[List[int], List[int]]:
    """Channels and blocks of each stage of a ResT backbone's state dict."""
    depths = stage_depths(state_dict, r'stage(\d+)\.(\d+)\.')
    dims = [state_dict[f'stage{i + 1}.0.norm1.weight'].shape[0] for i in range(len(depths))]
    return dims, depths


def resmlp_deit_to_timm(state_dict: StateDict) -> StateDict:
    """An authors' ResMLP file to timm's keys, which the ResMLP backbone has (``alpha`` / ``beta`` in timm's (1, 1,
    C) shape); a timm file is returned as it is."""
    if 'patch_embed.proj.weight' not in state_dict:
        return state_dict
    converted = {}
    for key, value in state_dict.items():
        for old, new in DEIT_TO_TIMM_RENAMES:
            key = key.replace(old, new)
        converted[key] = value.reshape(1, 1, -1) if key.endswith(('.alpha', '.beta')) else value
    return converted
