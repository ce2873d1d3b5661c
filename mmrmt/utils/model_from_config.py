"""Build a config's model for analysis on the CPU."""
from mmengine.config import Config
from mmengine.registry import MODELS, init_default_scope
from torch import nn

from .sync_bn import revert_sync_bn_when_single


def build_cpu_model(cfg: Config) -> nn.Module:
    """``cfg.model`` in eval mode on the CPU, with BN for SyncBN, no checkpoint loaded."""
    revert_sync_bn_when_single(cfg, distributed=False)
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    model = MODELS.build(cfg.model)
    return model.eval()
