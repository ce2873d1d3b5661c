"""Use plain BatchNorm wherever synchronised BatchNorm cannot run.

Multi-GPU configs normalise with ``SyncBN``; a single process has nothing to
synchronise with, and torch's ``SyncBatchNorm`` refuses CPU tensors, so a run
that is not distributed over CUDA devices swaps it for ``BN``.
"""
from typing import Any, Optional

import torch
from mmengine.config import Config

SYNC_BN_TYPES = ('SyncBN', 'MMSyncBN')


def replace_sync_bn_types(node: Any) -> None:
    """Set ``type='BN'`` on every SyncBN norm config inside ``node`` (in place)."""
    if isinstance(node, dict):
        if node.get('type') in SYNC_BN_TYPES:
            node['type'] = 'BN'
        node = list(node.values())
    for value in node if isinstance(node, (list, tuple)) else ():
        replace_sync_bn_types(value)


def revert_sync_bn_when_single(cfg: Config, distributed: Optional[bool] = None) -> Config:
    """Replace SyncBN by BN in ``cfg.model`` (in place) unless the run is distributed and CUDA is available.

    Args:
        cfg (Config): The run's config.
        distributed (bool, optional): Whether the run is distributed; by default the config's
            ``launcher`` decides (anything but ``'none'`` is distributed).

    Returns:
        Config: ``cfg``.
    """
    if distributed is None:
        distributed = cfg.get('launcher', 'none') != 'none'
    if not (distributed and torch.cuda.is_available()) and 'model' in cfg:
        replace_sync_bn_types(cfg.model)
    return cfg
