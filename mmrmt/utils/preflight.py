"""Checks run by the tools before anything is built, each failing with one clear line.

A wrong path otherwise surfaces minutes later, deep inside a dataset or a
checkpoint loader, as a long traceback. :class:`PreflightError` carries a
single-line message naming the missing path and how to fix it.
"""
import os.path as osp
from typing import Iterator, Optional, Sequence, Tuple

from mmengine.config import Config

DEMO_DATA_HINT = 'for the demo configs run `python tools/misc/make_demo_data.py`'


class PreflightError(RuntimeError):
    """A problem found before the run starts; its message is one line."""


def is_remote(path: str) -> bool:
    """Whether ``path`` names something a loader fetches (URL, model zoo)."""
    return '://' in path


def check_config_file(path: str) -> None:
    if not osp.isfile(path):
        raise PreflightError(f'config file not found: {path}')


def check_checkpoint_file(path: Optional[str], role: str) -> None:
    """Fail unless ``path`` is None, remote, or an existing file.

    Args:
        path (str, optional): The checkpoint.
        role (str): What the checkpoint is for, used in the message
            (e.g. ``'--resume checkpoint'``).
    """
    if path is None or is_remote(path) or osp.isfile(path):
        return
    raise PreflightError(f'{role} not found: {path}')


def leaf_datasets(dataset: dict) -> Iterator[dict]:
    """The dataset configs inside wrappers (``dataset=`` / ``datasets=``)."""
    if 'dataset' in dataset:
        yield from leaf_datasets(dataset['dataset'])
    elif 'datasets' in dataset:
        for child in dataset['datasets']:
            yield from leaf_datasets(child)
    else:
        yield dataset


def dataset_paths(dataset: dict) -> Iterator[Tuple[str, str, bool]]:
    """(description, path, is_dir) of the files and folders a dataset reads."""
    root = dataset.get('data_root') or ''
    if root:
        yield 'data root', root, True
    if dataset.get('ann_file'):
        yield 'annotation file', osp.join(root, dataset['ann_file']), False
    for key, prefix in (dataset.get('data_prefix') or {}).items():
        if prefix:
            yield f'{key} folder', osp.join(root, prefix), True


def check_dataloader_paths(cfg: Config, dataloaders: Sequence[str]) -> None:
    """Fail on the first missing data root, annotation file or image folder.

    Args:
        cfg (Config): The run's config.
        dataloaders (Sequence[str]): Keys such as ``'train_dataloader'``;
            those absent from ``cfg`` (or None) are skipped.
    """
    for name in dataloaders:
        loader = cfg.get(name)
        if not loader:
            continue
        for dataset in leaf_datasets(loader['dataset']):
            for what, path, is_dir in dataset_paths(dataset):
                exists = osp.isdir(path) if is_dir else osp.isfile(path)
                if not (exists or is_remote(path)):
                    raise PreflightError(
                        f'{what} of {name} not found: {path} (set it with --cfg-options, '
                        f'or {DEMO_DATA_HINT})')


def check_evaluator_files(cfg: Config, evaluators: Sequence[str]) -> None:
    """Fail when an evaluator's ``ann_file`` (e.g. CocoMetric's) is missing."""
    for name in evaluators:
        evaluator = cfg.get(name)
        metrics = evaluator if isinstance(evaluator, (list, tuple)) else [evaluator]
        for metric in metrics:
            ann_file = metric.get('ann_file') if isinstance(metric, dict) else None
            if ann_file and not (is_remote(ann_file) or osp.isfile(ann_file)):
                raise PreflightError(
                    f'annotation file of {name} not found: {ann_file} (set it with '
                    f'--cfg-options, or {DEMO_DATA_HINT})')
