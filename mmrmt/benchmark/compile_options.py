"""``compile_report.py --options KEY=VALUE ...``: Inductor options for ``torch.compile(options=...)``, read
and checked as torch would check them, before any model is built.

torch.compile takes Inductor's config values by name (``freezing=True``,
``layout_optimization=False``; a dash in a name reads as an underscore) and
refuses an unknown name or a value of another type only once it is called;
here both are one line naming the nearest option or the type the option
takes. Values are read as mmengine's ``DictAction`` reads a scalar (int,
float, true/false, None, else a string); nothing is evaluated.
"""
import typing
from typing import Any, Dict, Sequence

import torch
from mmengine.config import DictAction

from mmrmt.utils import PreflightError
from mmrmt.utils.cfg_options import nearest


def parse_compile_options(pairs: Sequence[str]) -> Dict[str, Any]:
    """The Inductor options that ``KEY=VALUE`` ``pairs`` name, checked against torch's Inductor config.

    Args:
        pairs (Sequence[str]): ``--options`` as given, e.g. ``['freezing=True']``.

    Returns:
        dict: Option name (underscores) to value, for ``torch.compile(options=...)``.

    Raises:
        PreflightError: A pair without ``=``, an option Inductor does not have, or a value of another type.
    """
    from torch._inductor import config

    known = config.get_config_copy()
    options = {}
    for pair in pairs:
        key, equals, text = pair.partition('=')
        name = key.strip().replace('-', '_')
        if not equals or not name:
            raise PreflightError(f'--options {pair}: give KEY=VALUE, e.g. freezing=True')
        if name not in known:
            close = nearest(name, known)
            hint = f'; did you mean {close}?' if close else ''
            raise PreflightError(f'--options {pair}: torch {torch.__version__} Inductor has no option {name!r}{hint}')
        value = DictAction._parse_int_float_bool(text.strip().strip('\'"'))
        expected = config.get_type(name)
        if typing.get_origin(expected) is None and not isinstance(value, expected):
            raise PreflightError(f'--options {pair}: {name} takes a {expected.__name__}, got {value!r} '
                                 f'({type(value).__name__})')
        options[name] = value
    return options


def format_compile_options(options: Dict[str, Any]) -> str:
    """``options`` as the report's header gives them: 'freezing=True layout_optimization=False'."""
    return ' '.join(f'{name}={value}' for name, value in options.items())
