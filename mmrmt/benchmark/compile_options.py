"""``compile_report.py --options KEY=VALUE ...``: Inductor options for ``torch.compile(options=...)``, read
and checked before any model is built (:mod:`mmrmt.engine.inductor_options` judges them, as it judges a
config's ``compile = dict(options=dict(...))``). Values are read as mmengine's ``DictAction`` reads a
scalar (int, float, true/false, None, else a string); nothing is evaluated.
"""
from typing import Any, Dict, Sequence

from mmengine.config import DictAction

from mmrmt.engine.inductor_options import inductor_option_problem
from mmrmt.utils import PreflightError


def parse_compile_options(pairs: Sequence[str], flag: str = '--options') -> Dict[str, Any]:
    """The Inductor options that ``KEY=VALUE`` ``pairs`` name, checked.

    Args:
        pairs (Sequence[str]): ``--options`` as given, e.g. ``['freezing=True']``.
        flag (str): The option that gave them, in messages (``--compile-options`` in the tools' ``--compile``).

    Returns:
        dict: Option name (underscores) to value, for ``torch.compile(options=...)``.

    Raises:
        PreflightError: A pair without ``=``, an option Inductor does not have, or a value of another type.
    """
    options = {}
    for pair in pairs:
        key, equals, text = pair.partition('=')
        name = key.strip().replace('-', '_')
        if not equals or not name:
            raise PreflightError(f'{flag} {pair}: give KEY=VALUE, e.g. freezing=True')
        value = DictAction._parse_int_float_bool(text.strip().strip('\'"'))
        problem = inductor_option_problem(name, value)
        if problem is not None:
            raise PreflightError(f'{flag} {pair}: {problem}')
        options[name] = value
    return options


def format_compile_options(options: Dict[str, Any]) -> str:
    """``options`` as the report's header gives them: 'freezing=True layout_optimization=False'."""
    return ' '.join(f'{name}={value}' for name, value in options.items())
