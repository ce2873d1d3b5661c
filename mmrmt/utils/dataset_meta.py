"""The class names (and palette) of a config's test set: the one place a tool reads them."""
from mmengine.config import Config
from mmengine.registry import DATASETS, init_default_scope

from mmrmt.checkpoint import one_line_reason
from .preflight import PreflightError, leaf_datasets


def config_dataset_meta(cfg: Config) -> dict:
    """``classes`` (and ``palette``, when the dataset has one) of the config's test set, as lists.

    The test set (else the validation set; inside a wrapper, its first
    dataset) is built without loading anything (``lazy_init``), so its
    metainfo is what the library's dataset class makes of the config's
    ``metainfo``: the config's classes, or the dataset's own. Empty when the
    config has neither loader.

    Raises:
        PreflightError: The dataset does not build.
    """
    loader = cfg.get('test_dataloader') or cfg.get('val_dataloader')
    if not loader:
        return {}
    dataset = dict(next(leaf_datasets(loader['dataset'])), lazy_init=True)
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    try:
        metainfo = DATASETS.build(dataset).metainfo
    except Exception as error:  # a dataset's constructor can raise anything
        raise PreflightError(f'the test set of {cfg.filename} does not build: {one_line_reason(error)}') from error
    return {key: list(metainfo[key]) for key in ('classes', 'palette') if metainfo.get(key)}
