"""Loading and building the model-zoo configs (configs/rmt, rest, resmlp) in tests."""
import contextlib
import functools
from pathlib import Path
from typing import Iterator, List

import mmengine.config.config as mmengine_config
from mmengine.config import Config
from mmengine.registry import MODELS, init_default_scope
from torch import nn

from mmrmt.utils import revert_sync_bn_when_single

REPO = Path(__file__).resolve().parents[2]
CONFIG_DIR = REPO / 'configs'
ZOO_FOLDERS = ('rmt', 'rest', 'resmlp')

INIT_FUNCTIONS = ('uniform_', 'normal_', 'trunc_normal_', 'constant_', 'ones_', 'zeros_',
                  'kaiming_uniform_', 'kaiming_normal_', 'xavier_uniform_', 'xavier_normal_')


@contextlib.contextmanager
def cached_external_config_paths() -> Iterator[None]:
    """Remember where ``mmdet::``/``mmseg::`` bases live while inside.

    mmengine finds each such base by reading all of the package's metafiles
    (about 0.7 s a lookup); the answer cannot change during a test session.
    """
    original = mmengine_config._get_external_cfg_path
    mmengine_config._get_external_cfg_path = functools.lru_cache(maxsize=None)(original)
    try:
        yield
    finally:
        mmengine_config._get_external_cfg_path = original


def zoo_config_paths() -> List[Path]:
    """Every experiment config of the model zoo, sorted."""
    return sorted(path for folder in ZOO_FOLDERS for path in (CONFIG_DIR / folder).glob('*.py'))


def load_config(path: Path) -> Config:
    """The config at ``path`` with its model set up for one CPU process (BN for SyncBN)."""
    cfg = Config.fromfile(str(path))
    return revert_sync_bn_when_single(cfg, distributed=False)


@contextlib.contextmanager
def skip_parameter_init() -> Iterator[None]:
    """Leave new parameters uninitialised (their shapes are all a count needs)."""
    saved = {name: getattr(nn.init, name) for name in INIT_FUNCTIONS}
    try:
        for name in INIT_FUNCTIONS:
            setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for name, function in saved.items():
            setattr(nn.init, name, function)


def build_model(cfg: Config) -> nn.Module:
    """Build ``cfg.model`` in the config's default scope (mmdet or mmseg)."""
    init_default_scope(cfg.default_scope)
    return MODELS.build(cfg.model)


def count_parameters(model: nn.Module) -> int:
    return sum(param.numel() for param in model.parameters())


def config_name(path: Path) -> str:
    return path.stem
