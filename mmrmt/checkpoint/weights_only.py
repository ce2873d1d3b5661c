"""The one allow-list of torch's weights-only unpickler, allowed for each of mmrmt's loads only (torch's own
is left as the user has it): besides tensors and containers, upstream scripts' argparse arguments, numpy
arrays, dtypes and scalars and, where mmengine is installed, its ``HistoryBuffer`` with its statistic
functions (pickled as ``getattr(HistoryBuffer, 'mean')``). Anything else is refused.
"""
import argparse
import re
from functools import lru_cache
from pickle import UnpicklingError
from typing import Callable, List, Optional, Tuple, Union

import numpy as np
import torch.serialization

#: What docs/troubleshooting.md advises for a file holding more than weights.
REFUSAL_ADVICE = ("re-save the weights alone (torch.save({'state_dict': model.state_dict()}, path)) "
                  'where the file comes from, or convert it (tools/model_converters/)')

SafeGlobal = Union[Callable, Tuple[Callable, str]]
NUMERIC_TYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                 np.uint32, np.uint64, np.float16, np.float32, np.float64)
#: Every HistoryBuffer has these statistics; others are registered with ``register_statistics``.
DEFAULT_STATISTICS = ('min', 'max', 'current', 'mean')
ANSI_ESCAPE = re.compile(r'\x1b\[[0-9;]*m')


def one_line_reason(error: BaseException) -> str:
    """``error`` as ``'Type: reason'`` on one line: the first non-empty line of its message, taken after
    torch's weights-only advice (to turn the safety off) where there is some, colour codes removed."""
    text = ANSI_ESCAPE.sub('', str(error))
    if 'WeightsUnpickler error:' in text:
        text = text.split('WeightsUnpickler error:', 1)[1]
    elif text.startswith('Weights only load failed.'):  # a blocked module: the reason follows on the next lines
        text = text.partition('\n')[2]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f'{type(error).__name__}: {lines[0]}' if lines else type(error).__name__


def history_buffer_globals() -> List[SafeGlobal]:
    """mmengine's ``HistoryBuffer`` and ``builtins.getattr`` resolving its statistic functions only;
    nothing where mmengine cannot be imported."""
    try:
        from mmengine.logging import HistoryBuffer
    except ImportError:
        return []

    def statistic(owner: type, name: str) -> Callable:
        found = HistoryBuffer._statistics_methods.get(name)
        if found is None and name in DEFAULT_STATISTICS:
            found = getattr(HistoryBuffer, name)
        if owner is not HistoryBuffer or found is None:
            raise UnpicklingError(f'refusing getattr({owner!r}, {name!r}) in a weights-only load: only the '
                                  'statistic functions of mmengine\'s HistoryBuffer are allowed')
        return found

    return [HistoryBuffer, (statistic, 'builtins.getattr')]


@lru_cache(maxsize=None)
def checkpoint_safe_globals() -> Tuple[SafeGlobal, ...]:
    """What a weights-only load of mmrmt allows besides tensors and containers (see the module)."""
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy 1
        from numpy.core import multiarray
    dtype_classes = sorted({type(np.dtype(scalar_type)) for scalar_type in NUMERIC_TYPES}, key=str)
    reconstructors = [(function, f'{module}.{function.__name__}') for module in ('numpy.core.multiarray',
                      'numpy._core.multiarray') for function in (multiarray._reconstruct, multiarray.scalar)]
    return (argparse.Namespace, np.ndarray, np.dtype, *dtype_classes, *reconstructors, *history_buffer_globals())


def load_with_checkpoint_types(file: object, map_location: object = None) -> object:
    """``torch.load(file, map_location, weights_only=True)`` allowing :func:`checkpoint_safe_globals` for this
    load only (an ``UnpicklingError`` for any other object, none of it built)."""
    with torch.serialization.safe_globals(list(checkpoint_safe_globals())):
        return torch.load(file, map_location=map_location, weights_only=True)


class CheckpointRefusedError(UnpicklingError):
    """A checkpoint holds objects torch's weights-only unpickler refuses; none of them was built."""


def load_weights_only(file: object, map_location: object = None, weights_only: Optional[bool] = None) -> object:
    """:func:`load_with_checkpoint_types` whatever a caller asks (``weights_only`` is not used), with no fallback:
    what mmengine's loaders become; a :class:`CheckpointRefusedError` names the file, the reason and the fix."""
    try:
        return load_with_checkpoint_types(file, map_location)
    except UnpicklingError as error:
        name = file if isinstance(file, str) else getattr(file, 'name', 'the downloaded checkpoint')
        reason = one_line_reason(error).split(' Please use ', 1)[0]  # not torch's advice to allow it
        raise CheckpointRefusedError(f'checkpoint {name} holds Python objects besides weights ({reason}), so it '
                                     f'was not loaded and none of its code ran: {REFUSAL_ADVICE}') from None
