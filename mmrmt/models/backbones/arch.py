"""A backbone's variant: its settings from the ``arch`` argument (a name or a
dict), or its name from the shapes of a state dict."""
import re
from typing import Any, Dict, List, Mapping, Sequence, Union


def resolve_arch(arch: Union[str, Mapping[str, Any]],
                 arch_zoo: Mapping[str, Mapping[str, Any]],
                 per_stage_keys: Sequence[str],
                 backbone: str) -> Dict[str, Any]:
    """Return the settings of ``arch`` with its per-stage lists checked.

    Args:
        arch (str | dict): A variant name (a key of ``arch_zoo``, any case)
            or a dict holding every key of ``per_stage_keys`` (and whatever
            scalar settings the backbone reads).
        arch_zoo (dict): Variant name -> settings.
        per_stage_keys (Sequence[str]): Keys whose values are one entry per
            stage; they must all have the same length.
        backbone (str): The backbone's name, for error messages.

    Returns:
        dict: A copy of the settings, per-stage values as lists.
    """
    if isinstance(arch, str):
        name = arch.lower()
        if name not in arch_zoo:
            raise KeyError(f'{backbone}: unknown arch {arch!r}; choose one of '
                           f'{sorted(arch_zoo)} or pass a dict with the keys '
                           f'{list(per_stage_keys)}.')
        settings = dict(arch_zoo[name])
    elif isinstance(arch, Mapping):
        missing = [key for key in per_stage_keys if key not in arch]
        if missing:
            raise KeyError(f'{backbone}: a custom arch needs the keys {list(per_stage_keys)}; '
                           f'missing {missing}.')
        settings = dict(arch)
    else:
        raise TypeError(f'{backbone}: arch must be a variant name or a dict, got {type(arch).__name__}.')

    for key in per_stage_keys:
        if not isinstance(settings[key], Sequence) or isinstance(settings[key], str):
            raise TypeError(f'{backbone}: arch[{key!r}] must be a list with one entry per stage, '
                            f'got {settings[key]!r}.')
        settings[key] = list(settings[key])
    lengths = {key: len(settings[key]) for key in per_stage_keys}
    if len(set(lengths.values())) > 1:
        raise ValueError(f'{backbone}: the per-stage lists of arch must have the same length, '
                         f'got {lengths}.')
    return settings


def check_heads_divide_dims(embed_dims: Sequence[int], num_heads: Sequence[int], backbone: str) -> None:
    """Raise ``ValueError`` unless every stage's channels split evenly into its heads."""
    for stage, (channels, heads) in enumerate(zip(embed_dims, num_heads)):
        if heads < 1 or channels % heads:
            raise ValueError(f'{backbone}: embed_dims[{stage}]={channels} is not divisible by '
                             f'num_heads[{stage}]={heads}.')


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
    """The first variant name in ``arch_zoo`` with these ``embed_dims`` and ``depths``."""
    for arch, settings in arch_zoo.items():
        if list(settings['embed_dims']) == embed_dims and list(settings['depths']) == depths:
            return arch
    raise ValueError(f'{backbone}: no variant has embed_dims={embed_dims} and depths={depths}')
