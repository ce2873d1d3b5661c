"""Inductor options of ``torch.compile(options=...)``, judged as torch.compile judges them, but before
anything is built: a config's ``compile = dict(options=dict(...))`` (which mmengine passes to
torch.compile for the training step, after the work dir, the log and the model exist) and
``compile_report.py --options``.

torch.compile takes Inductor's config values by name (``freezing=True``,
``layout_optimization=False``; a dash in a name reads as an underscore) and
refuses an unknown name, or a value of another type, with a traceback that
lists all of its several hundred options.
"""
import typing
from typing import Any, Mapping, Optional

import torch

from mmrmt.models.backbones.arch import nearest_name


def inductor_option_problem(name: str, value: Any) -> Optional[str]:
    """What is wrong with Inductor option ``name`` (underscores) set to ``value``, None if nothing:
    an unknown option (naming the nearest) or a value of another type."""
    from torch._inductor import config

    known = config.get_config_copy()
    if name not in known:
        nearest = nearest_name(name, known)
        hint = f'; did you mean {nearest}?' if nearest else ''
        return f'torch {torch.__version__} Inductor has no option {name!r}{hint}'
    expected = config.get_type(name)
    if typing.get_origin(expected) is None and not isinstance(value, expected):
        return f'{name} takes a {expected.__name__}, got {value!r} ({type(value).__name__})'
    return None


def compile_setting_problem(compile_cfg: Any) -> Optional[str]:
    """What is wrong with a config's ``compile`` setting (True, False, None or the keyword arguments of
    torch.compile), None if nothing: 'compile.options.NAME: ...' for its first bad Inductor option."""
    options = compile_cfg.get('options') if isinstance(compile_cfg, Mapping) else None
    if not isinstance(options, Mapping):
        return None
    for key, value in options.items():
        problem = inductor_option_problem(str(key).replace('-', '_'), value)
        if problem is not None:
            return f'compile.options.{key}: {problem}'
    return None
