"""ResT detectron2 detector checkpoints (the authors' COCO models) to the
:class:`~mmrmt.models.backbones.ResT` backbone's keys."""
import re
from typing import List, Tuple

from ..reading import StateDict, extract_state_dict
from .variant import stage_depths

DETECTRON2_BACKBONE_PREFIX = 'backbone.bottom_up.'


def rest_detectron2_to_mmrmt(state_dict: StateDict) -> StateDict:
    """A ResT detectron2 detector (``backbone.bottom_up.*``) to the ResT backbone.

    The detectron2 backbone names its output norms ``norm1``-``norm3`` (stage
    4 uses the final ``norm``); mmrmt calls them ``extra_norms.0``-``2``.
    FPN and head weights are left out.

    Raises:
        ValueError: The file has no ``backbone.bottom_up.`` weights.
    """
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
