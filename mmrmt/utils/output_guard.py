"""A tool's outputs never overwrite its inputs: each output path, links resolved, is
checked against what the tool reads (checkpoint, config, images, dataset folders).

``--force`` lets a tool replace its own earlier output; it never lets it write over,
or into, one of its inputs. Both checks run before anything is built or written.
"""
import os.path as osp
from typing import Iterable, List, Optional, Tuple

from mmrmt.checkpoint import is_remote
from .preflight import PreflightError, check_writable, dataset_paths, leaf_datasets

#: (role, path) of one input of a tool, e.g. ``('the checkpoint', 'ck.pth')``.
Input = Tuple[str, Optional[str]]


def resolved(path: str) -> str:
    """``path`` absolute, with every symbolic link of it (and of its folders) resolved."""
    return osp.realpath(osp.abspath(osp.expanduser(path)))


def lies_within(path: str, folder: str) -> bool:
    """Whether resolved ``path`` is resolved ``folder`` or lies anywhere below it."""
    return path == folder or path.startswith(folder.rstrip(osp.sep) + osp.sep)


def check_not_an_input(output: str, what: str, inputs: Iterable[Input]) -> None:
    """Fail if ``output`` is one of ``inputs``, or lies inside an input folder, links resolved.

    Args:
        output (str): A file or folder the tool writes.
        what (str): Its role in the message, e.g. ``'--out'``.
        inputs (Iterable[tuple]): (role, path) of everything the tool reads;
            a path that is None, empty or remote is skipped.

    Raises:
        PreflightError: Naming the input and that ``--force`` does not help.
    """
    target = resolved(output)
    for role, path in inputs:
        if not path or is_remote(path):
            continue
        source = resolved(path)
        if target == source:
            relation = 'is'
        elif osp.isdir(source) and lies_within(target, source):
            relation = 'lies inside'
        else:
            continue
        raise PreflightError(f'{what} {output} {relation} {role} {path}; a tool never writes over its '
                             f'inputs (not even with --force): choose another {what}')


def check_new_file(path: str, what: str, force: bool, inputs: Iterable[Input] = ()) -> None:
    """Fail if writing file ``path`` would destroy a user's file.

    Args:
        path (str): The file to write.
        what (str): Its role in the message, e.g. ``'destination'``.
        force (bool): Whether replacing an existing file (the tool's earlier
            output) was asked for.
        inputs (Iterable[tuple]): (role, path) of the tool's inputs, which
            ``path`` may never be nor lie inside, whatever ``force`` says.
    """
    check_not_an_input(path, what, inputs)
    if osp.exists(path) and not force:
        raise PreflightError(f'{what} {path} exists; choose another path, or add --force to '
                             'replace it')
    check_writable(path, what, is_dir=False)


def dataloader_inputs(cfg, dataloaders: Iterable[str]) -> List[Input]:
    """(role, path) of the annotation files and image folders the config's loaders read.

    A data root counts only when no ``data_prefix`` folder is set (the
    images are then read from it): outputs under a data root beside its
    image folders overwrite nothing, and a root of ``'.'`` would refuse
    every output.

    Args:
        cfg (Config): The run's config.
        dataloaders (Iterable[str]): Keys such as ``'test_dataloader'``; those
            absent from ``cfg`` (or None) are skipped.
    """
    inputs = []
    for name in dataloaders:
        loader = cfg.get(name)
        if not loader:
            continue
        for dataset in leaf_datasets(loader['dataset']):
            paths = list(dataset_paths(dataset))
            has_prefix = any(role.endswith('folder') for role, _, _ in paths)
            inputs += [(f'the {role} of {name}', path) for role, path, _ in paths
                       if not (role == 'data root' and has_prefix)]
    return inputs
