"""Upstream RMT checkpoints (ImageNet classifier, mmdet 2.x / mmseg 0.x
detector or segmentor) to the :class:`~mmrmt.models.backbones.RMT` backbone's keys."""
from typing import List, Tuple

from ..reading import StateDict, extract_state_dict
from .variant import stage_depths


def rmt_upstream_to_mmrmt(state_dict: StateDict) -> StateDict:
    """An upstream RMT file (ImageNet classifier, or an mmdet 2.x/mmseg 0.x
    detector or segmentor holding it under ``backbone.``) to the RMT backbone.

    The backbone keeps its upstream names; of a detector or segmentor only the
    backbone (with its output norms ``extra_norms.*``) is kept. The ImageNet
    classifier stays in: the backbone drops it when loading
    (``RMT.dropped_checkpoint_prefixes``).

    Raises:
        ValueError: The file holds no RMT backbone.
    """
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
