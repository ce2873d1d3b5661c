"""The paths a run reads and writes, checked before anything is built: its inputs exist, and no output is
(or lies inside) an input, links resolved, whatever ``--force`` says (the runner refuses to train over an earlier
run: :func:`mmrmt.engine.own_checkpoint.earlier_run_problem`)."""
import os.path as osp
from typing import Any, Iterable, Iterator, List, Optional, Sequence, Tuple

from mmengine.config import Config

from mmrmt.checkpoint import is_remote
from .preflight import PreflightError, check_writable

#: (role, path) of one input of a tool, e.g. ``('the checkpoint', 'ck.pth')``.
Input = Tuple[str, Optional[str]]


def leaf_datasets(node: Any) -> Iterator[dict]:
    """The dataset configs inside a loader or a wrapper (``dataset=`` / ``datasets=``); an evaluator's metric (or each
    of a list) is its own leaf (its ``ann_file``, e.g. CocoMetric's, is what :func:`dataset_paths` gives)."""
    if isinstance(node, (list, tuple)):
        for child in node:
            yield from leaf_datasets(child)
    elif 'dataset' in node:
        yield from leaf_datasets(node['dataset'])
    elif 'datasets' in node:
        yield from leaf_datasets(node['datasets'])
    else:
        yield node


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


def check_data_paths(cfg: Config, names: Sequence[str]) -> None:
    """Fail on the first missing data root, annotation file or image folder of the loaders and evaluators ``names``
    (e.g. ``['test_dataloader', 'test_evaluator']``)."""
    for name in names:
        for part in leaf_datasets(cfg.get(name) or {}):
            for what, path, is_dir in dataset_paths(part):
                if not ((osp.isdir(path) if is_dir else osp.isfile(path)) or is_remote(path)):
                    raise PreflightError(f'{what} of {name} not found: {path} (set it with --cfg-options, or for the '
                                         'demo configs run `python tools/misc/make_demo_data.py`)')


def resolved(path: str) -> str:
    """``path`` absolute, every symbolic link resolved."""
    return osp.realpath(osp.abspath(osp.expanduser(path)))


def check_not_an_input(output: str, what: str, inputs: Iterable[Input]) -> None:
    """Fail if ``output`` (``what`` in the message) is one of ``inputs`` ((role, path); None, empty or remote paths
    skipped) or lies inside an input folder, links resolved."""
    target = resolved(output)
    for role, path in inputs:
        if not path or is_remote(path):
            continue
        source = resolved(path)
        if target == source:
            relation = 'is'
        elif osp.isdir(source) and (target + osp.sep).startswith(source.rstrip(osp.sep) + osp.sep):
            relation = 'lies inside'
        else:
            continue
        raise PreflightError(f'{what} {output} {relation} {role} {path}; a tool never writes over its '
                             f'inputs (not even with --force): choose another {what}')


def check_new_file(path: str, what: str, force: bool, inputs: Iterable[Input] = ()) -> None:
    """Fail if writing file ``path`` would destroy one of ``inputs`` (whatever ``force`` says) or, without ``force``,
    an existing file; or if it cannot be written."""
    check_not_an_input(path, what, inputs)
    if osp.exists(path) and not force:
        raise PreflightError(f'{what} {path} exists; choose another path, or add --force to replace it')
    check_writable(path, what, is_dir=False)


def dataloader_inputs(cfg: Config, dataloaders: Iterable[str]) -> List[Input]:
    """(role, path) of what the config's loaders read; a data root only where no ``data_prefix`` folder is set (a
    root of ``'.'`` would refuse every output)."""
    inputs = []
    for name in dataloaders:
        for dataset in leaf_datasets(cfg.get(name) or {}):
            paths = list(dataset_paths(dataset))
            has_prefix = any(role.endswith('folder') for role, _, _ in paths)
            inputs += [(f'the {role} of {name}', path) for role, path, _ in paths
                       if not (role == 'data root' and has_prefix)]
    return inputs
