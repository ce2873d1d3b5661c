"""Use plain BatchNorm wherever synchronised BatchNorm cannot run.

Multi-GPU configs normalise with ``SyncBN``; a single process has nothing to
synchronise with, and torch's ``SyncBatchNorm`` refuses CPU tensors, so a run
that is not distributed over CUDA devices swaps it for ``BN``.
"""
from typing import Any, Optional, TypeVar, Union

import torch
from mmengine.config import Config
from mmengine.dist import is_distributed
from mmengine.model import revert_sync_batchnorm
from torch import nn

SYNC_BN_TYPES = ('SyncBN', 'MMSyncBN')
Target = TypeVar('Target', bound=Union[Config, nn.Module])


def needs_plain_bn(distributed: bool) -> bool:
    """Whether synchronised BN must become BN: single process, or no CUDA."""
    return not (distributed and torch.cuda.is_available())


def replace_sync_bn_types(node: Any) -> int:
    """Set ``type='BN'`` on every SyncBN norm config inside ``node`` (in place).

    Returns:
        int: How many norm configs were changed.
    """
    changed = 0
    if isinstance(node, dict):
        if node.get('type') in SYNC_BN_TYPES:
            node['type'] = 'BN'
            changed += 1
        for value in node.values():
            changed += replace_sync_bn_types(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            changed += replace_sync_bn_types(value)
    return changed


def revert_sync_bn_when_single(target: Target, distributed: Optional[bool] = None) -> Target:
    """Replace SyncBN by BN in a config's model or in a built model, if needed.

    SyncBN stays only when the run is distributed and CUDA is available.

    Args:
        target (Config | nn.Module): A config (its ``model`` is rewritten in
            place) or a model (its SyncBN layers are converted).
        distributed (bool, optional): Whether the run is distributed. By
            default a config's ``launcher`` decides (anything but ``'none'``
            is distributed) and, for a model, whether a process group is up.

    Returns:
        Config | nn.Module: ``target`` for a config, the converted model for a
        model.
    """
    if isinstance(target, Config):
        if distributed is None:
            distributed = target.get('launcher', 'none') != 'none'
        if needs_plain_bn(distributed) and 'model' in target:
            replace_sync_bn_types(target.model)
        return target
    if isinstance(target, nn.Module):
        if distributed is None:
            distributed = is_distributed()
        return revert_sync_batchnorm(target) if needs_plain_bn(distributed) else target
    raise TypeError(f'revert_sync_bn_when_single takes a Config or an nn.Module, '
                    f'got {type(target).__name__}.')
