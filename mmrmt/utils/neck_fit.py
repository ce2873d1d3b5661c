"""Whether a built model's backbone gives what reads its features (the neck, else the decode and auxiliary heads)
the channels it was built for: a config whose ``backbone.type`` was changed alone builds and fails only in its first
forward, with a shape error of torch's. mmrmt's backbones are checked (their output norms), others not."""
from typing import Iterator, List, Optional, Sequence, Tuple, Union

from torch import nn

from mmrmt.models.backbones.base_backbone import PyramidBackbone
from .preflight import PreflightError


def backbone_channels(backbone: nn.Module) -> Optional[List[int]]:
    """The channels of each feature an mmrmt backbone emits, in order; None for another backbone."""
    if not isinstance(backbone, PyramidBackbone):
        return None
    return [backbone.output_norm(stage).normalized_shape[0] for stage in backbone.out_indices]


def feature_readers(model: nn.Module) -> Iterator[Tuple[str, nn.Module]]:
    """(setting, module) of what reads the backbone's features: the (first) neck, else the decode heads."""
    neck = getattr(model, 'neck', None)
    if neck is not None:
        yield 'model.neck', neck[0] if isinstance(neck, nn.Sequential) else neck
        return
    for setting in ('decode_head', 'auxiliary_head'):
        heads = getattr(model, setting, None)
        if isinstance(heads, nn.ModuleList):
            yield from ((f'model.{setting}.{index}', head) for index, head in enumerate(heads))
        elif heads is not None:
            yield f'model.{setting}', heads


def channels_read(reader: nn.Module, given: Sequence[int]) -> Optional[Union[int, List[int]]]:
    """The ``in_channels`` ``reader`` would take of features with ``given`` channels, by its ``in_index`` (mmseg's
    heads; all without one); None where that cannot be told."""
    index = getattr(reader, 'in_index', None)
    try:
        if index is None:
            return list(given)
        if isinstance(index, int):
            return given[index]
        selected = [given[i] for i in index]
    except (IndexError, TypeError):
        return None  # an index out of range: the head's own check
    return sum(selected) if getattr(reader, 'input_transform', None) == 'resize_concat' else selected


def check_backbone_fits_readers(model: nn.Module, config: str) -> None:
    """Fail unless the ``in_channels`` of what reads the backbone's features fit its ``out_channels``.

    Args:
        model (nn.Module): A built model (one without a ``backbone`` passes).
        config (str): The config's name, in the message.

    Raises:
        PreflightError: One line naming both channel lists and the setting to change.
    """
    given = backbone_channels(getattr(model, 'backbone', None))
    if given is None:
        return
    for setting, reader in feature_readers(model):
        taken = getattr(reader, 'in_channels', None)
        wanted = channels_read(reader, given)
        if taken is None or wanted is None or (list(taken) if isinstance(taken, (list, tuple)) else taken) == wanted:
            continue
        raise PreflightError(f'{config}: the backbone ({type(model.backbone).__name__}) gives features of '
                             f'{given} channels, but {setting} ({type(reader).__name__}) takes '
                             f'in_channels={taken!r}: set {setting}.in_channels={wanted!r}')
