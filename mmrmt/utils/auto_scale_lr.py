"""``tools/train.py --auto-scale-lr``: learning rates scaled to the run's batch size."""
from mmengine.config import Config

from .preflight import PreflightError


def enable_auto_scale_lr(cfg: Config) -> None:
    """Turn on ``cfg.auto_scale_lr``, mmdet's way.

    mmengine's runner then multiplies every learning rate by
    (processes x ``train_dataloader.batch_size``) / ``auto_scale_lr.base_batch_size``
    before the schedulers start.

    Raises:
        PreflightError: The config has no ``auto_scale_lr.base_batch_size``.
    """
    if not (cfg.get('auto_scale_lr') or {}).get('base_batch_size'):
        raise PreflightError('--auto-scale-lr needs auto_scale_lr = dict(base_batch_size=N) in the '
                             'config: N, the total batch size its learning rate was set for')
    cfg.auto_scale_lr.enable = True
