"""Build a config's model on the CPU: the one way every tool does it; with initialised weights drawn
from a seed, the same in every tool (an export's graph and the benchmark's torch model)."""
import copy
import warnings
from contextlib import contextmanager
from typing import Iterator

import torch
from mmengine.config import Config
from mmengine.registry import MODELS, init_default_scope
from torch import nn

from mmrmt.checkpoint import one_line_reason
from .neck_fit import check_backbone_fits_readers
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
        PreflightError: The config has no model, the model does not build
            (an unknown type or argument, a bad value...), or its neck (or heads)
            take other channels than its backbone gives (see
            :func:`.neck_fit.check_backbone_fits_readers`).
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
    check_backbone_fits_readers(model, cfg.filename)
    return model.eval()


#: Seed of the initialised weights a tool uses without a checkpoint (pytorch2onnx.py's export, the benchmark).
INIT_SEED = 0


@contextmanager
def quiet_mmengine_log() -> Iterator[None]:
    """Within the context, mmengine logs warnings only (``init_weights`` logs every parameter)."""
    from mmengine.logging import MMLogger
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel('WARNING')
    try:
        yield
    finally:
        logger.setLevel(level)


def build_seeded_model(cfg: Config) -> nn.Module:
    """:func:`build_cpu_model` with the initialisation a training run starts from (``init_weights``),
    drawn from :data:`INIT_SEED` (torch's global generator is left as it was), but for the backbone's
    pretrained checkpoint, which ``cfg`` must not name: two builds of one config hold the same weights.

    Raises:
        PreflightError: See :func:`build_cpu_model`.
    """
    with torch.random.fork_rng(), quiet_mmengine_log():
        torch.manual_seed(INIT_SEED)
        model = build_cpu_model(cfg)
        model.init_weights()
    return model.eval()
