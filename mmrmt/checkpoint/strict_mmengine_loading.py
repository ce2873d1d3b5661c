"""mmengine's checkpoint loading made weights-only on every mmengine, with no fallback.

Every checkpoint mmengine loads (``load_from``, ``--resume``,
``init_cfg=dict(type='Pretrained')``, ``load_checkpoint``) goes through
``mmengine.runner.checkpoint``. Upstream mmengine 0.10 loads a local file
with torch's default (weights-only from torch 2.6 on, refused with advice to
turn the safety off); onedl-mmengine's ``_safe_torch_load`` retries every
refused weights-only load with ``weights_only=False``, which runs whatever
code the file's pickle holds. :func:`make_mmengine_loading_strict` (armed by
``import mmrmt`` through :func:`strict_when_mmengine_loads`, so also by a
config's ``custom_imports``) replaces both with :func:`load_weights_only`:
a refused file raises :class:`CheckpointRefusedError`, one line naming the
file and what to do, and :func:`print_refusals_in_one_line` makes that the
last line of any launcher (mmdet's and mmseg's own ``tools/train.py`` and
``tools/test.py`` too) instead of a traceback.

``import mmrmt`` does not import mmengine's Runner: when
``mmengine.runner.checkpoint`` is not imported yet, it is made strict the
moment it is (:class:`AfterImport`).
"""
import importlib.abc
import os.path as osp
import sys
from pickle import UnpicklingError
from types import ModuleType, TracebackType
from typing import Callable, Optional, Type

import torch

from .reading import one_line_reason

#: The module of mmengine that loads every checkpoint.
MMENGINE_CHECKPOINT = 'mmengine.runner.checkpoint'

#: What docs/troubleshooting.md advises for a file holding more than weights.
REFUSAL_ADVICE = ("re-save the weights alone (torch.save({'state_dict': model.state_dict()}, path)) "
                  'where the file comes from, or convert it (tools/model_converters/)')


class CheckpointRefusedError(UnpicklingError):
    """A checkpoint holds objects torch's weights-only unpickler refuses; none of them was built."""


def refusal_message(file: object, error: BaseException) -> str:
    """One line: which file was refused, why, and what to do instead."""
    name = file if isinstance(file, str) else getattr(file, 'name', 'the downloaded checkpoint')
    reason = one_line_reason(error).split(' Please use ', 1)[0]  # not torch's advice to allow it
    return (f'checkpoint {name} holds Python objects besides weights ({reason}), so it was not '
            f'loaded and none of its code ran: {REFUSAL_ADVICE}')


def load_weights_only(file: object, map_location: object = None, weights_only: Optional[bool] = None) -> object:
    """``torch.load`` with ``weights_only=True`` always: what onedl-mmengine's
    ``_safe_torch_load`` becomes (same arguments), without its fallback.

    Args:
        file (str | file-like): The checkpoint.
        map_location (optional): Same as :func:`torch.load`.
        weights_only (bool, optional): Not used: the load is weights-only
            whatever a caller asks (no caller in mmengine asks otherwise).

    Returns:
        object: The checkpoint (tensors, containers and the types of
        :data:`~mmrmt.checkpoint.weights_only.CHECKPOINT_SAFE_GLOBALS`).

    Raises:
        CheckpointRefusedError: The file holds anything else.
    """
    try:
        return torch.load(file, map_location=map_location, weights_only=True)
    except UnpicklingError as error:
        raise CheckpointRefusedError(refusal_message(file, error)) from None


def load_from_local_weights_only(filename: str, map_location: object = None) -> object:
    """mmengine's loader of local paths (scheme ``''``; its log names it the
    ``local_weights_only`` backend), loading through :func:`load_weights_only`.

    Args:
        filename (str): The checkpoint's path (``~`` expanded).
        map_location (optional): Same as :func:`torch.load`.

    Raises:
        FileNotFoundError: No such file (mmengine's own message).
        CheckpointRefusedError: The file holds more than weights.
    """
    filename = osp.expanduser(filename)
    if not osp.isfile(filename):
        raise FileNotFoundError(f'{filename} can not be found.')
    return load_weights_only(filename, map_location)


def make_mmengine_loading_strict(module: ModuleType) -> None:
    """Make ``mmengine.runner.checkpoint`` (``module``) load every checkpoint weights-only.

    Replaces the loader of local paths and, on onedl-mmengine, its
    ``_safe_torch_load`` (which the loaders of the other schemes call).
    Calling it again changes nothing.
    """
    if hasattr(module, '_safe_torch_load'):
        module._safe_torch_load = load_weights_only
    loader = module.CheckpointLoader._schemes.get('')
    if getattr(loader, '__wrapped__', loader) is not load_from_local_weights_only:
        module.CheckpointLoader.register_scheme('', load_from_local_weights_only, force=True)


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``callback(module)`` right after the module named ``name`` is first imported.

    Args:
        name (str): The module's full name.
        callback (Callable): Called with the module once it has run.
    """

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self.name, self.callback = name, callback

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1:]:
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        sys.meta_path.remove(self)
        run_module = spec.loader.exec_module

        def run_then_call_back(module: ModuleType) -> None:
            run_module(module)
            self.callback(module)

        spec.loader.exec_module = run_then_call_back
        return spec


def strict_when_mmengine_loads() -> None:
    """:func:`make_mmengine_loading_strict` now, or as soon as mmengine's checkpoint module is imported."""
    module = sys.modules.get(MMENGINE_CHECKPOINT)
    if module is not None:
        make_mmengine_loading_strict(module)
    elif not any(isinstance(finder, AfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, AfterImport(MMENGINE_CHECKPOINT, make_mmengine_loading_strict))


def print_refusals_in_one_line() -> None:
    """Let an uncaught :class:`CheckpointRefusedError` end the process with its one
    ``error: ...`` line (status 1) instead of a traceback; other errors as before."""
    previous = sys.excepthook
    if getattr(previous, 'prints_refusals', False):
        return

    def excepthook(kind: Type[BaseException], error: BaseException, traceback: Optional[TracebackType]) -> None:
        if issubclass(kind, CheckpointRefusedError):
            print(f'error: {error}', file=sys.stderr)
        else:
            previous(kind, error, traceback)

    excepthook.prints_refusals = True
    sys.excepthook = excepthook
