"""torch's weights-only unpickler with mmrmt's one allow-list, for each of mmrmt's loads only (torch's own is left as
the user has it): besides tensors and containers, upstream scripts' argparse arguments, numpy arrays, dtypes and
scalars and, where mmengine is installed, its ``HistoryBuffer`` with its statistic functions (pickled as
``getattr(HistoryBuffer, 'mean')``). Anything else is refused, none of it built."""
import argparse
import re
from functools import lru_cache
from pickle import UnpicklingError
from typing import Callable, Optional, Tuple

import numpy as np
import torch.serialization

#: What docs/troubleshooting.md advises for a file holding more than weights.
REFUSAL_ADVICE = ("re-save the weights alone (torch.save({'state_dict': model.state_dict()}, path)) "
                  'where the file comes from, or convert it (tools/model_converters/)')
NUMERIC_TYPES = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                 np.uint32, np.uint64, np.float16, np.float32, np.float64)
ANSI_ESCAPE = re.compile(r'\x1b\[[0-9;]*m')


class CheckpointRefusedError(UnpicklingError):
    """A checkpoint holds objects torch's weights-only unpickler refuses; none of them was built."""


def one_line_reason(error: BaseException) -> str:
    """``error`` as ``'Type: reason'``: the first non-empty line of its message (after torch's advice to turn the
    safety off, where there is some), colour codes removed."""
    text = ANSI_ESCAPE.sub('', str(error))
    if 'WeightsUnpickler error:' in text:
        text = text.split('WeightsUnpickler error:', 1)[1]
    elif text.startswith('Weights only load failed.'):  # a blocked module: the reason follows on the next lines
        text = text.partition('\n')[2]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f'{type(error).__name__}: {lines[0]}' if lines else type(error).__name__


def history_buffer_statistic(owner: type, name: str) -> Callable:
    """``getattr(owner, name)`` for a statistic function of mmengine's ``HistoryBuffer`` only."""
    from mmengine.logging import HistoryBuffer
    HistoryBuffer()  # an instance registers the default statistics (min, max, current, mean) with the class
    found = HistoryBuffer._statistics_methods.get(name)
    if owner is not HistoryBuffer or found is None:
        raise UnpicklingError(f'refusing getattr({owner!r}, {name!r}) in a weights-only load: only the '
                              'statistic functions of mmengine\'s HistoryBuffer are allowed')
    return found


@lru_cache(maxsize=None)
def checkpoint_safe_globals() -> Tuple[object, ...]:
    """What a weights-only load of mmrmt allows besides tensors and containers (see the module)."""
    dtype_classes = sorted({type(np.dtype(scalar_type)) for scalar_type in NUMERIC_TYPES}, key=str)
    # the functions an array and a scalar pickle as (multiarray's _reconstruct and scalar), by numpy 1's and 2's names
    functions = (np.ndarray(0).__reduce__()[0], np.float64(0).__reduce__()[0])
    reconstructors = [(function, f'{module}.{function.__name__}') for module in ('numpy.core.multiarray',
                      'numpy._core.multiarray') for function in functions]
    try:
        from mmengine.logging import HistoryBuffer
        history = [HistoryBuffer, (history_buffer_statistic, 'builtins.getattr')]
    except ImportError:
        history = []
    return (argparse.Namespace, np.ndarray, np.dtype, *dtype_classes, *reconstructors, *history)


def load_weights_only(file: object, map_location: object = None, weights_only: Optional[bool] = None) -> object:
    """``torch.load(file, map_location, weights_only=True)`` allowing :func:`checkpoint_safe_globals` for this load
    only, whatever a caller asks (``weights_only`` is not used), with no fallback: what mmengine's loaders become.

    Raises:
        CheckpointRefusedError: Naming the file, the reason and the fix.
    """
    try:
        with torch.serialization.safe_globals(list(checkpoint_safe_globals())):
            return torch.load(file, map_location=map_location, weights_only=True)
    except UnpicklingError as error:
        name = file if isinstance(file, str) else getattr(file, 'name', 'the downloaded checkpoint')
        reason = one_line_reason(error).split(' Please use ', 1)[0]  # not torch's advice to allow it
        raise CheckpointRefusedError(f'checkpoint {name} holds Python objects besides weights ({reason}), so it '
                                     f'was not loaded and none of its code ran: {REFUSAL_ADVICE}') from None
