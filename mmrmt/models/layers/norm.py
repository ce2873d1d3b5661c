"""The BatchNorm-like layers after the backbones' convs, built from a ``norm_cfg``.

The names and layers are mmcv's (``build_norm_layer``), so configs, state
dicts and outputs are the same, without importing ``mmcv.cnn`` (whose package
loads mmengine's Runner). ``SyncBN`` is ``torch.nn.SyncBatchNorm``, so
mmengine's ``revert_sync_batchnorm`` and ``convert_sync_batchnorm`` find it.
"""
from typing import Dict, Type

from torch import nn

#: ``norm_cfg['type']`` -> the layer it builds.
NORM_LAYERS: Dict[str, Type[nn.Module]] = dict(
    BN=nn.BatchNorm2d, SyncBN=nn.SyncBatchNorm, GN=nn.GroupNorm, LN=nn.LayerNorm, IN=nn.InstanceNorm2d)


def check_norm_cfg(norm_cfg: dict, owner: str = 'norm_cfg') -> None:
    """Fail unless ``norm_cfg`` is a dict naming a type of :data:`NORM_LAYERS`.

    Args:
        norm_cfg (dict): E.g. ``dict(type='SyncBN', requires_grad=True)``.
        owner (str): What the error line starts with, e.g. ``'RMT: norm_cfg'``.

    Raises:
        TypeError: ``norm_cfg`` is not a dict with a string ``type``.
        ValueError: Its type is none of :data:`NORM_LAYERS`.
    """
    if not isinstance(norm_cfg, dict) or not isinstance(norm_cfg.get('type'), str):
        raise TypeError(f"{owner} must be a dict with a 'type', e.g. dict(type='BN') or "
                        f"dict(type='SyncBN', requires_grad=True), got {norm_cfg!r}.")
    if norm_cfg['type'] not in NORM_LAYERS:
        raise ValueError(f"{owner} type {norm_cfg['type']!r} is unknown: use one of "
                         f"{', '.join(NORM_LAYERS)}.")


def build_norm_layer(norm_cfg: dict, num_features: int) -> nn.Module:
    """The norm layer ``norm_cfg`` describes, over ``num_features`` channels.

    As mmcv's ``build_norm_layer(norm_cfg, num_features)[1]``: ``eps``
    defaults to 1e-5, ``requires_grad=False`` freezes the layer's
    parameters, the other keys are the layer's arguments (``GN`` needs
    ``num_groups``).

    Args:
        norm_cfg (dict): ``type`` (a key of :data:`NORM_LAYERS`),
            ``requires_grad`` (bool, default True) and the layer's arguments.
        num_features (int): Channels the layer normalizes.

    Raises:
        TypeError: ``norm_cfg`` is not such a dict, or holds arguments its
            layer does not take.
        ValueError: Its type is unknown.
    """
    check_norm_cfg(norm_cfg)
    options = dict(norm_cfg)
    layer_class = NORM_LAYERS[options.pop('type')]
    requires_grad = options.pop('requires_grad', True)
    options.setdefault('eps', 1e-5)
    if layer_class is nn.GroupNorm and 'num_groups' not in options:
        raise TypeError(f"norm_cfg {norm_cfg!r}: GN needs num_groups, e.g. dict(type='GN', num_groups=32).")
    try:
        layer = (layer_class(num_channels=num_features, **options) if layer_class is nn.GroupNorm
                 else layer_class(num_features, **options))
    except TypeError as error:
        raise TypeError(f'norm_cfg {norm_cfg!r}: {error}') from None
    for parameter in layer.parameters():
        parameter.requires_grad = requires_grad
    return layer
