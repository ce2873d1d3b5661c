"""What a tool builds from a config on the CPU: the model (the one way every tool does it; with initialised
weights drawn from one seed for an export's graph and the benchmark), and the test set's class names."""
import copy
import warnings

import torch
from mmengine.config import Config
from mmengine.logging import MMLogger
from mmengine.registry import DATASETS, MODELS, init_default_scope
from torch import nn

from mmrmt.checkpoint import one_line_reason
from .neck_fit import check_backbone_fits_readers
from .output_guard import leaf_datasets
from .preflight import PreflightError
from .run_config import replace_sync_bn_types

#: Seed of the initialised weights a tool uses without a checkpoint (pytorch2onnx.py's export, the benchmark).
INIT_SEED = 0


def build_cpu_model(cfg: Config, quiet: bool = False) -> nn.Module:
    """``cfg.model`` built in eval mode on the CPU as the runner builds it (the config's ``data_preprocessor``
    unless the model has one), with BN for SyncBN, no checkpoint loaded; ``quiet`` hides the build's warnings.

    Raises:
        PreflightError: The config has no model, the model does not build, or its neck (or heads) take
            other channels than its backbone gives (:func:`.neck_fit.check_backbone_fits_readers`).
    """
    if not isinstance(cfg.get('model'), dict):
        raise PreflightError(f'{cfg.filename} has no model = dict(type=...) setting')
    model_cfg = copy.deepcopy(cfg.model)
    if cfg.get('data_preprocessor') is not None:
        model_cfg.setdefault('data_preprocessor', cfg.data_preprocessor)
    replace_sync_bn_types(model_cfg)
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    try:
        with warnings.catch_warnings(record=quiet):  # recorded: into a list no one reads
            model = MODELS.build(model_cfg)
    except Exception as error:  # a constructor can raise anything
        raise PreflightError(f'the model of {cfg.filename} does not build: {one_line_reason(error)}') from error
    check_backbone_fits_readers(model, cfg.filename)
    return model.eval()


def build_seeded_model(cfg: Config) -> nn.Module:
    """:func:`build_cpu_model` with ``init_weights`` drawn from :data:`INIT_SEED` (torch's generator left as it
    was; mmengine's log quiet but for warnings): two builds of a config naming no pretrained file are equal."""
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel('WARNING')  # init_weights logs every parameter
    try:
        with torch.random.fork_rng():
            torch.manual_seed(INIT_SEED)
            model = build_cpu_model(cfg)
            model.init_weights()
    finally:
        logger.setLevel(level)
    return model.eval()


def config_dataset_meta(cfg: Config) -> dict:
    """``classes`` (and ``palette``) of the config's test set (else validation set; a wrapper's first dataset),
    as lists, as its dataset class reads the config's ``metainfo`` (built ``lazy_init``: nothing loaded);
    empty without either loader. A :class:`PreflightError` when the dataset does not build."""
    loader = cfg.get('test_dataloader') or cfg.get('val_dataloader')
    if not loader:
        return {}
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    try:
        metainfo = DATASETS.build(dict(next(leaf_datasets(loader['dataset'])), lazy_init=True)).metainfo
    except Exception as error:  # a dataset's constructor can raise anything
        raise PreflightError(f'the test set of {cfg.filename} does not build: {one_line_reason(error)}') from error
    return {key: list(metainfo[key]) for key in ('classes', 'palette') if metainfo.get(key)}
