"""mmengine's ``HistoryBuffer`` in a weights-only load: the class and its statistic functions only
(imported by :mod:`.weights_only` where mmengine is installed)."""
from pickle import UnpicklingError
from typing import Callable, List, Tuple, Union

from mmengine.logging import HistoryBuffer

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


def history_buffer_globals() -> List[Union[Callable, Tuple[Callable, str]]]:
    """The class, and ``builtins.getattr`` as :func:`history_buffer_statistic`."""
    return [HistoryBuffer, (history_buffer_statistic, 'builtins.getattr')]
