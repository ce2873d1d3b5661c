"""The one allow-list of torch's weights-only unpickler: what checkpoints hold
besides tensors and plain containers, and nothing that can run code.

torch >= 2.6 loads with ``weights_only=True`` by default and refuses the
non-tensor objects training scripts store beside the weights. Instead of
turning the safety off, mmrmt's loads (:func:`load_with_checkpoint_types`: our readers,
and mmengine's loaders where :mod:`mmrmt.upstream_fixes` replaces them) allow
:func:`checkpoint_safe_globals` for the duration of the load only: torch's
own allow-list is left as the user has it. The list holds:

* the argparse arguments upstream training scripts pickle beside the weights
  (:class:`argparse.Namespace`, a bag of attributes);
* numpy arrays, dtypes and scalars of logged values (under numpy 2's
  ``numpy._core`` and numpy 1's ``numpy.core`` paths);
* where mmengine is installed, the message hub's
  :class:`~mmengine.logging.HistoryBuffer` of every logged scalar, whose
  state holds its statistic functions (pickled as
  ``getattr(HistoryBuffer, 'mean')``): ``builtins.getattr`` is mapped to
  :func:`history_buffer_statistic`, which resolves only those.

Anything else (another class, a real ``getattr`` call) is still refused.
"""
import argparse
from functools import lru_cache
from pickle import UnpicklingError
from typing import Callable, List, Optional, Tuple, Union

import numpy as np
import torch.serialization

from .reasons import one_line_reason

#: What docs/troubleshooting.md advises for a file holding more than weights.
REFUSAL_ADVICE = ("re-save the weights alone (torch.save({'state_dict': model.state_dict()}, path)) "
                  'where the file comes from, or convert it (tools/model_converters/)')

SafeGlobal = Union[Callable, Tuple[Callable, str]]

NUMERIC_TYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                 np.uint32, np.uint64, np.float16, np.float32, np.float64)


def numpy_reconstructors() -> List[SafeGlobal]:
    """numpy arrays, numeric dtypes and scalars, under numpy 1 and 2 module paths."""
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy 1
        from numpy.core import multiarray
    dtype_classes = {type(np.dtype(scalar_type)) for scalar_type in NUMERIC_TYPES}
    globals_: List[SafeGlobal] = [np.ndarray, np.dtype, *sorted(dtype_classes, key=str)]
    for module in ('numpy.core.multiarray', 'numpy._core.multiarray'):
        globals_ += [(multiarray._reconstruct, f'{module}._reconstruct'),
                     (multiarray.scalar, f'{module}.scalar')]
    return globals_


def mmengine_globals() -> List[SafeGlobal]:
    """mmengine's ``HistoryBuffer`` and its statistic functions; nothing where mmengine cannot be imported."""
    try:
        from .history_buffer import history_buffer_globals
    except ImportError:
        return []
    return history_buffer_globals()


@lru_cache(maxsize=None)
def checkpoint_safe_globals() -> Tuple[SafeGlobal, ...]:
    """What a weights-only load of mmrmt allows besides tensors and containers (see the module)."""
    return (argparse.Namespace, *numpy_reconstructors(), *mmengine_globals())


def load_with_checkpoint_types(file: object, map_location: object = None) -> object:
    """``torch.load(file, map_location, weights_only=True)`` allowing :func:`checkpoint_safe_globals`
    for this load only.

    Raises:
        pickle.UnpicklingError: The file holds any other object (none of it is built).
    """
    with torch.serialization.safe_globals(list(checkpoint_safe_globals())):
        return torch.load(file, map_location=map_location, weights_only=True)


class CheckpointRefusedError(UnpicklingError):
    """A checkpoint holds objects torch's weights-only unpickler refuses; none of them was built."""


def refusal_message(file: object, error: BaseException) -> str:
    """One line: which file was refused, why, and what to do instead."""
    name = file if isinstance(file, str) else getattr(file, 'name', 'the downloaded checkpoint')
    reason = one_line_reason(error).split(' Please use ', 1)[0]  # not torch's advice to allow it
    return (f'checkpoint {name} holds Python objects besides weights ({reason}), so it was not '
            f'loaded and none of its code ran: {REFUSAL_ADVICE}')


def load_weights_only(file: object, map_location: object = None, weights_only: Optional[bool] = None) -> object:
    """:func:`load_with_checkpoint_types`, whatever a caller asks: what mmengine's loaders become
    (same arguments as onedl-mmengine's ``_safe_torch_load``), without a fallback.

    Args:
        file (str | file-like): The checkpoint.
        map_location (optional): Same as :func:`torch.load`.
        weights_only (bool, optional): Not used: the load is weights-only
            whatever a caller asks.

    Raises:
        CheckpointRefusedError: The file holds any other object; the message
            (one line) names the file, the reason and the fix.
    """
    try:
        return load_with_checkpoint_types(file, map_location)
    except UnpicklingError as error:
        raise CheckpointRefusedError(refusal_message(file, error)) from None
