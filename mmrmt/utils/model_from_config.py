"""Build a config's model on the CPU: the one way every tool does it."""
import copy
import warnings

from mmengine.config import Config
from mmengine.registry import MODELS, init_default_scope
from torch import nn

from mmrmt.checkpoint import one_line_reason
from .preflight import PreflightError
from .sync_bn import replace_sync_bn_types


def build_cpu_model(cfg: Config, quiet: bool = False) -> nn.Module:
    """``cfg.model`` built in eval mode on the CPU, with BN for SyncBN, no checkpoint loaded.

    ``cfg`` itself is left as it is (the SyncBN swap is made on a copy).

    Args:
        cfg (Config): A loaded config (its ``default_scope`` picks the registry).
        quiet (bool): Hide the warnings the build gives (e.g. when a tool
            builds the model only to check it, and the run builds it again).

    Raises:
        PreflightError: The config has no model, or the model does not build
            (an unknown type or argument, a bad value...).
    """
    if not isinstance(cfg.get('model'), dict):
        raise PreflightError(f'{cfg.filename} has no model = dict(type=...) setting')
    model_cfg = copy.deepcopy(cfg.model)
    replace_sync_bn_types(model_cfg)
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    try:
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter('ignore')
            model = MODELS.build(model_cfg)
    except Exception as error:  # a constructor can raise anything
        raise PreflightError(f'the model of {cfg.filename} does not build: {one_line_reason(error)}') from error
    return model.eval()
