"""Checks run by the tools before anything is built, each failing with one clear line.

A wrong path otherwise surfaces minutes later, deep inside a dataset or a
checkpoint loader, as a long traceback. :class:`PreflightError` carries a
single-line message naming the missing path and how to fix it.
"""
import ast
import os
import os.path as osp
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple

from mmengine.config import Config

from mmrmt.checkpoint.loading import one_line_reason

DEMO_DATA_HINT = 'for the demo configs run `python tools/misc/make_demo_data.py`'


class PreflightError(RuntimeError):
    """A problem found before the run starts; its message is one line."""


def is_remote(path: str) -> bool:
    """Whether ``path`` names something a loader fetches (URL, model zoo)."""
    return '://' in path


def local_bases(tree: ast.Module, file: str) -> List[str]:
    """The local ``_base_`` files a parsed config names (``scope::`` ones skipped)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == '_base_' for target in node.targets):
            try:
                bases = ast.literal_eval(node.value)
            except ValueError:  # not a literal: mmengine will say why
                return []
            bases = [bases] if isinstance(bases, str) else bases
            return [osp.normpath(osp.join(osp.dirname(file), base)) for base in bases
                    if isinstance(base, str) and '::' not in base]
    return []


def find_syntax_error(path: str) -> Optional[SyntaxError]:
    """The first syntax error in ``path`` or the local files of its ``_base_`` chain.

    The files are parsed, not run; mmengine reports a syntax error without
    naming the file, which this finds.
    """
    pending = [path]
    while pending:
        current = pending.pop()
        try:
            tree = ast.parse(Path(current).read_text(), filename=current)
        except SyntaxError as error:
            return error
        except OSError:
            continue
        pending += local_bases(tree, current)
    return None


def config_error(path: str, error: Exception) -> PreflightError:
    """The one-line error for a config that mmengine could not load: which file, why."""
    located = find_syntax_error(path) if isinstance(error, SyntaxError) else None
    if located is not None:
        return PreflightError(f'syntax error in config {located.filename}, line {located.lineno}: '
                              f'{located.msg}')
    return PreflightError(f'config {path} could not be loaded: {one_line_reason(error)}')


def read_config(path: str) -> Config:
    """Load a config file; any problem becomes a one-line error naming the file.

    Raises:
        PreflightError: The file is missing, or it (or one of its bases) has
            a syntax error or fails when run.
    """
    if not osp.isfile(path):
        raise PreflightError(f'config file not found: {path}')
    try:
        return Config.fromfile(path)
    except Exception as error:  # a config is Python: it can raise anything
        raise config_error(path, error) from error


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
        if osp.isdir(existing) != is_dir:
            kind = 'a folder' if is_dir else 'a file'
            raise PreflightError(f'{what} {path} must be {kind}, but it exists as something else')
        if not os.access(existing, os.W_OK):
            raise PreflightError(f'{what} {path} is not writable')
        return
    if not osp.isdir(existing):
        raise PreflightError(f'{what} {path} cannot be created: {existing} is a file, not a folder')
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PreflightError(f'{what} {path} cannot be created: {existing} is not writable')


def same_file(first: str, second: str) -> bool:
    """Whether two paths name one file (also through links)."""
    return osp.abspath(first) == osp.abspath(second) or (
        osp.exists(first) and osp.exists(second) and osp.samefile(first, second))


def check_new_file(path: str, what: str, force: bool, source: Optional[str] = None) -> None:
    """Fail if writing ``path`` would replace a user's file without ``--force``.

    Args:
        path (str): The file to write.
        what (str): Its role in the message, e.g. ``'destination'``.
        force (bool): Whether replacing an existing file was asked for.
        source (str, optional): The input the file is made from; writing
            over it also needs ``force``.
    """
    if not force and source is not None and same_file(path, source):
        raise PreflightError(f'{what} {path} is the source itself; write elsewhere, or add '
                             '--force to replace the source with the result')
    if osp.exists(path) and not force:
        raise PreflightError(f'{what} {path} exists; choose another path, or add --force to '
                             'replace it')
    check_writable(path, what, is_dir=False)


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
