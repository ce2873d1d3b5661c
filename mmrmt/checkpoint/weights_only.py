"""The one allow-list of torch's weights-only unpickler: what checkpoints hold
besides tensors and plain containers, and nothing that can run code.

torch >= 2.6 loads with ``weights_only=True`` by default and refuses the
non-tensor objects mmengine stores beside the weights, so ``--resume`` fails
in any launcher (ours, mmdet's or mmseg's ``tools/train.py``). Instead of
turning the safety off, :func:`allow_mmengine_checkpoints` (called when
``mmrmt`` is imported, e.g. through a config's ``custom_imports``) adds
:data:`CHECKPOINT_SAFE_GLOBALS` to torch's allow-list; :func:`~mmrmt.checkpoint.read_checkpoint`
loads with the same list. It holds:

* the argparse arguments upstream training scripts pickle beside the weights
  (:class:`argparse.Namespace`, a bag of attributes);
* the message hub's :class:`~mmengine.logging.HistoryBuffer` of every logged
  scalar, whose state holds its statistic functions (pickled as
  ``getattr(HistoryBuffer, 'mean')``): ``builtins.getattr`` is mapped to
  :func:`history_buffer_statistic`, which resolves only those;
* numpy arrays, dtypes and scalars of the logged values (under numpy 2's
  ``numpy._core`` and numpy 1's ``numpy.core`` paths).

Anything else (another class, a real ``getattr`` call) is still refused.
"""
import argparse
from pickle import UnpicklingError
from typing import Callable, List, Tuple, Union

import numpy as np
import torch.serialization
from mmengine.logging import HistoryBuffer

SafeGlobal = Union[Callable, Tuple[Callable, str]]
DEFAULT_STATISTICS = ('min', 'max', 'current', 'mean')  # every HistoryBuffer has these


def history_buffer_statistic(owner: type, name: str) -> Callable:
    """The stand-in for ``builtins.getattr`` while loading: HistoryBuffer statistics only.

    Args:
        owner (type): Must be :class:`~mmengine.logging.HistoryBuffer`.
        name (str): One of its default statistics ('min', 'max', 'current',
            'mean') or one registered with ``HistoryBuffer.register_statistics``.

    Returns:
        Callable: The statistic function, e.g. ``HistoryBuffer.mean``.

    Raises:
        UnpicklingError: For any other object or attribute.
    """
    statistic = HistoryBuffer._statistics_methods.get(name)
    if statistic is None and name in DEFAULT_STATISTICS:
        statistic = getattr(HistoryBuffer, name)
    if owner is not HistoryBuffer or statistic is None:
        raise UnpicklingError(
            f'refusing getattr({owner!r}, {name!r}) in a weights-only load: only the '
            'statistic functions of mmengine\'s HistoryBuffer are allowed')
    return statistic


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


CHECKPOINT_SAFE_GLOBALS: List[SafeGlobal] = [
    argparse.Namespace,
    HistoryBuffer,
    (history_buffer_statistic, 'builtins.getattr'),
    *numpy_reconstructors(),
]


def allow_mmengine_checkpoints() -> None:
    """Let weights-only ``torch.load`` accept mmengine (and upstream scripts')
    checkpoints, in this process.

    Adds :data:`CHECKPOINT_SAFE_GLOBALS` to torch's safe globals (once;
    calling again changes nothing). Everything else is still refused.

    Example:
        >>> allow_mmengine_checkpoints()  # done by ``import mmrmt``
        >>> checkpoint = torch.load('work_dirs/run/iter_4.pth', weights_only=True)
    """
    allowed = torch.serialization.get_safe_globals()
    torch.serialization.add_safe_globals(
        [entry for entry in CHECKPOINT_SAFE_GLOBALS if entry not in allowed])
