"""The load path's guard: a checkpoint mmengine loads never carries code for its resume to run.

mmengine's ``Runner.resume`` executes the text of a checkpoint's
``meta['config']`` (``Config.fromstring``) to compare the previous run's
``gpu_ids``. Every checkpoint mmengine loads goes through the loader that
:class:`~mmengine.runner.checkpoint.CheckpointLoader` picks by the path's
scheme (a local file, ``http://``, ``s3://``, ``open-mmlab://``, ...). Each
loader registered when :mod:`mmrmt.engine` is imported is wrapped here, so
that what it returns holds in ``meta['config']`` only plain data
(:func:`~mmrmt.checkpoint.make_resumed_config_inert`): this holds for any
runner, hooks and launcher, as long as the config imports ``mmrmt.engine``.
The wrapped loaders of local files and ``http(s)://`` read a ``.safetensors``
file with :func:`~mmrmt.checkpoint.read_checkpoint` (weights only), so that
``load_from`` takes one as it takes a ``.pth``.
"""
import functools
from typing import Callable

from mmengine.runner.checkpoint import CheckpointLoader

from mmrmt.checkpoint import is_safetensors_name, make_resumed_config_inert, read_checkpoint

#: Attribute marking a loader already wrapped (importing twice wraps once).
WRAPPED_MARK = '_mmrmt_resumed_config_inert'


def make_checkpoint_inert(checkpoint: object) -> object:
    """``checkpoint`` with ``meta['config']`` made plain data when it is an mmengine checkpoint."""
    if isinstance(checkpoint, dict):
        make_resumed_config_inert(checkpoint)
    return checkpoint


def is_readable_safetensors(filename: object) -> bool:
    """Whether ``filename`` is a ``.safetensors`` path or URL :func:`~mmrmt.checkpoint.read_checkpoint` reads."""
    return (isinstance(filename, str) and is_safetensors_name(filename)
            and ('://' not in filename or filename.startswith(('http://', 'https://'))))


def inert_loader(loader: Callable) -> Callable:
    """``loader`` whose checkpoints hold no code in ``meta['config']`` (same name, for mmengine's log)."""

    @functools.wraps(loader)
    def load(filename, *args, **kwargs):
        if is_readable_safetensors(filename):
            return read_checkpoint(filename)
        return make_checkpoint_inert(loader(filename, *args, **kwargs))

    setattr(load, WRAPPED_MARK, True)
    return load


def guard_checkpoint_loading() -> None:
    """Wrap every loader of mmengine's ``CheckpointLoader`` in :func:`inert_loader`.

    Loaders registered later (by a user's module) are not wrapped; for them
    :class:`~mmrmt.engine.OwnWorkDirRunner` makes the checkpoint inert itself.
    """
    for prefix, loader in list(CheckpointLoader._schemes.items()):
        if not getattr(loader, WRAPPED_MARK, False):
            CheckpointLoader.register_scheme(prefix, inert_loader(loader), force=True)
