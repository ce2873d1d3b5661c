"""Which variant a state dict holds: its blocks per stage, read from the keys,
and the variant of a backbone's ``arch_zoo`` with those widths and depths."""
import re
from typing import Any, Dict, List, Mapping


def stage_depths(state_dict: Mapping[str, Any], block_key: str) -> List[int]:
    """Blocks per stage, from the keys matching ``block_key`` (a regex with
    the stage and block indices as its two groups)."""
    blocks: Dict[int, int] = {}
    for key in state_dict:
        match = re.match(block_key, key)
        if match:
            stage, block = int(match.group(1)), int(match.group(2))
            blocks[stage] = max(blocks.get(stage, 0), block + 1)
    return [blocks[stage] for stage in sorted(blocks)]


def match_arch(arch_zoo: Mapping[str, Mapping[str, Any]], embed_dims: List[int], depths: List[int],
               backbone: str) -> str:
    """The first variant name in ``arch_zoo`` with these ``embed_dims`` and ``depths``.

    Raises:
        ValueError: No variant has them.
    """
    for arch, settings in arch_zoo.items():
        if list(settings['embed_dims']) == embed_dims and list(settings['depths']) == depths:
            return arch
    raise ValueError(f'{backbone}: no variant has embed_dims={embed_dims} and depths={depths}')
