"""Checks run by the tools before anything is built, each failing with one clear line.

A wrong path otherwise surfaces minutes later, deep inside a dataset or a
checkpoint loader, as a long traceback. :class:`PreflightError` carries a
single-line message naming the missing path and how to fix it.
"""
import os
import os.path as osp
from contextlib import contextmanager
from typing import Iterator, Sequence, Tuple

from mmengine.config import Config

from mmrmt.checkpoint import is_remote

DEMO_DATA_HINT = 'for the demo configs run `python tools/misc/make_demo_data.py`'


class PreflightError(RuntimeError):
    """A problem a tool reports as one line: a bad input, found before anything is
    built or written wherever it can be (the one error type of every tool, turned
    into ``error: <message>`` and exit status 1 by :func:`mmrmt.utils.run_main`)."""


@contextmanager
def file_errors_as_tool_errors() -> Iterator[None]:
    """Within the block, a file that is missing or not what it should be
    (``FileNotFoundError``, ``ValueError`` of :mod:`mmrmt.checkpoint`) is a
    :class:`PreflightError` with the same one-line message."""
    try:
        yield
    except (FileNotFoundError, ValueError) as error:
        raise PreflightError(str(error)) from error


def nearest_existing(path: str) -> str:
    """``path`` itself if it exists, else its closest existing ancestor."""
    path = osp.abspath(path)
    while not osp.exists(path):
        path = osp.dirname(path)
    return path


def check_writable(path: str, what: str, is_dir: bool) -> None:
    """Fail unless ``path`` can be created or written, without creating anything.

    Args:
        path (str): A folder (``is_dir``) or a file the run will write.
        what (str): Its role in the message, e.g. ``'--work-dir'``.
        is_dir (bool): Whether ``path`` is a folder.
    """
    existing = nearest_existing(path)
    if existing == osp.abspath(path):
        if is_dir and not osp.isdir(existing):
            raise PreflightError(f'{what} {path} exists and is not a folder')
        if not is_dir and osp.isdir(existing):
            raise PreflightError(f'{what} {path} is a folder; name a file')
        if not os.access(existing, os.W_OK):
            raise PreflightError(f'{what} {path} is not writable')
        return
    if not osp.isdir(existing):
        raise PreflightError(f'{what} {path} cannot be created: {existing} is a file, not a folder')
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PreflightError(f'{what} {path} cannot be created: {existing} is not writable')


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
