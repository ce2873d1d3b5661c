"""A backbone's variant: its settings from the ``arch`` argument (a name or a
dict), or read from the shapes of an upstream file; and the checks of
constructor arguments against the values they accept."""
import difflib
import math
import numbers
import re
from typing import Any, Callable, Dict, Iterable, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from mmrmt.checkpoint import StateDict


class ArgKind(NamedTuple):
    """The values an argument accepts: a type, a range, and how to say both.

    Args:
        types (tuple[type]): What the value must be an instance of; ``bool``
            never passes for a number (``True`` is not a depth).
        in_range (Callable[[Any], bool]): True for the values of the right
            type that are allowed.
        allowed (str): The allowed values in words, for error messages.
    """
    types: Tuple[type, ...]
    in_range: Callable[[Any], bool]
    allowed: str


INT = (numbers.Integral, )
REAL = (numbers.Real, )
POSITIVE_INT = ArgKind(INT, lambda value: value >= 1, 'an int >= 1')
NON_NEGATIVE_INT = ArgKind(INT, lambda value: value >= 0, 'an int >= 0')
POWER_OF_TWO = ArgKind(INT, lambda value: value >= 1 and not value & (value - 1),
                       'a power of two (1, 2, 4, 8, ...)')
POSITIVE_REAL = ArgKind(REAL, lambda value: math.isfinite(value) and value > 0, 'a finite number > 0')
NON_NEGATIVE_REAL = ArgKind(REAL, lambda value: math.isfinite(value) and value >= 0, 'a finite number >= 0')
DROP_RATE = ArgKind(REAL, lambda value: 0 <= value < 1, 'a number in [0, 1)')
BOOL = ArgKind((bool, ), lambda value: True, 'True or False')


def check_arg(backbone: str, name: str, value: Any, kind: ArgKind) -> None:
    """Raise unless ``value`` is one of the values ``kind`` accepts.

    Raises:
        TypeError: ``value`` has the wrong type (a bool where a number goes).
        ValueError: ``value`` has the right type but is out of range.
    """
    if not isinstance(value, kind.types) or (isinstance(value, bool) and bool not in kind.types):
        raise TypeError(f'{backbone}: {name} must be {kind.allowed}, got {value!r} ({type(value).__name__}).')
    if not kind.in_range(value):
        raise ValueError(f'{backbone}: {name} must be {kind.allowed}, got {value!r}.')


def resolve_arch(arch: Union[str, Mapping[str, Any]],
                 arch_zoo: Mapping[str, Mapping[str, Any]],
                 backbone: str,
                 per_stage: Optional[Mapping[str, ArgKind]] = None,
                 scalars: Optional[Mapping[str, ArgKind]] = None,
                 optional: Optional[Mapping[str, ArgKind]] = None) -> Dict[str, Any]:
    """Return the settings of ``arch``, every value checked.

    Args:
        arch (str | dict): A variant name (a key of ``arch_zoo``, any case)
            or a dict holding every key of ``per_stage`` and ``scalars``, and
            any of ``optional``; no other key.
        arch_zoo (dict): Variant name -> settings.
        backbone (str): The backbone's name, for error messages.
        per_stage (dict, optional): Key -> the kind of each entry of its
            list; one entry per stage, all lists of the same length.
        scalars (dict, optional): Key -> kind of the required single values.
        optional (dict, optional): Key -> kind of the single values an arch
            may set.

    Returns:
        dict: A copy of the settings, per-stage values as lists.
    """
    per_stage, scalars, optional = per_stage or {}, scalars or {}, optional or {}
    required = [*per_stage, *scalars]
    if isinstance(arch, str):
        name = arch.lower()
        if name not in arch_zoo:
            raise KeyError(f'{backbone}: unknown arch {arch!r}; choose one of {sorted(arch_zoo)} '
                           f'or pass a dict with the keys {required}.')
        settings = dict(arch_zoo[name])
    elif isinstance(arch, Mapping):
        missing = [key for key in required if key not in arch]
        unknown = [key for key in arch if key not in required and key not in optional]
        if missing or unknown:
            raise KeyError(f'{backbone}: a custom arch needs the keys {required} and may have '
                           f'{list(optional)}; missing {missing}, unknown {unknown}.')
        settings = dict(arch)
    else:
        raise TypeError(f'{backbone}: arch must be a variant name or a dict, got {type(arch).__name__}.')

    for key, kind in per_stage.items():
        values = settings[key]
        if not isinstance(values, Sequence) or isinstance(values, str) or not values:
            raise TypeError(f'{backbone}: arch[{key!r}] must be a non-empty list with one entry per '
                            f'stage, got {values!r}.')
        settings[key] = list(values)
        for stage, value in enumerate(values):
            check_arg(backbone, f'arch[{key!r}][{stage}]', value, kind)
    lengths = {key: len(settings[key]) for key in per_stage}
    if len(set(lengths.values())) > 1:
        raise ValueError(f'{backbone}: the per-stage lists of arch must have the same length, '
                         f'got {lengths}.')
    for key, kind in {**scalars, **optional}.items():
        if key in settings:
            check_arg(backbone, f'arch[{key!r}]', settings[key], kind)
    return settings


def check_heads_divide_dims(embed_dims: Sequence[int], num_heads: Sequence[int], backbone: str) -> None:
    """Raise ``ValueError`` unless every stage's channels split evenly into its heads."""
    for stage, (channels, heads) in enumerate(zip(embed_dims, num_heads)):
        if channels % heads:
            raise ValueError(f'{backbone}: embed_dims[{stage}]={channels} is not divisible by '
                             f'num_heads[{stage}]={heads}.')


def nearest_name(name: str, names: Iterable[str], cutoff: float = 0.6) -> Optional[str]:
    """The one of ``names`` nearest to a misspelt ``name`` (difflib's ratio at least ``cutoff``), if any:
    the hint of every unknown-name error (backbone arguments, ``--cfg-options`` keys, Inductor options)."""
    matches = difflib.get_close_matches(name, list(names), n=1, cutoff=cutoff)
    return matches[0] if matches else None


class UpstreamFiles(NamedTuple):
    """How the authors' files of a backbone become files it loads (``tools/model_converters``), as timm keeps a
    ``checkpoint_filter_fn`` beside each model.

    Args:
        convert (Callable[[StateDict], StateDict]): Their keys to the backbone's; a ``ValueError`` for a file that
            holds no such backbone.
        block_key (str): A regex matching the keys of every block, grouping its stage and its index.
        width_key (str): The tensor whose length is a stage's width, ``{}`` standing for the stage (numbered as
            ``block_key`` groups it).
    """
    convert: Callable[[StateDict], StateDict]
    block_key: str
    width_key: str

    def variant(self, state_dict: StateDict, arch_zoo: Mapping[str, Mapping[str, Any]], backbone: str) -> str:
        """The first name in ``arch_zoo`` whose ``embed_dims`` and ``depths`` are those of the converted
        ``state_dict`` (a ``ValueError`` naming them when none is)."""
        blocks: Dict[int, int] = {}
        for key in state_dict:
            match = re.match(self.block_key, key)
            if match:
                stage, block = int(match.group(1)), int(match.group(2))
                blocks[stage] = max(blocks.get(stage, 0), block + 1)
        depths = [blocks[stage] for stage in sorted(blocks)]
        embed_dims = [state_dict[self.width_key.format(stage)].shape[0] for stage in sorted(blocks)]
        for arch, settings in arch_zoo.items():
            if list(settings['embed_dims']) == embed_dims and list(settings['depths']) == depths:
                return arch
        raise ValueError(f'{backbone}: no variant has embed_dims={embed_dims} and depths={depths}')
