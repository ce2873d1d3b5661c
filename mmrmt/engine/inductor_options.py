"""A config's ``compile`` setting and ``torch.compile(options=...)``'s Inductor options, judged as torch.compile
judges them but before anything is built (mmengine compiles the training step after the work dir, the log and
the model exist; torch refuses an unknown option with a list of all of its several hundred)."""
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
    """What is wrong with a config's ``compile`` (True, False, None or torch.compile's keyword arguments),
    None if nothing: one line naming the setting, or ``compile.options.NAME: ...``.

    The keywords (mode, backend, mode with options) are judged by torch.compile itself, which checks them
    when called and compiles nothing until the function runs; the options' values one by one.
    """
    if compile_cfg is None or isinstance(compile_cfg, bool):
        return None
    if not isinstance(compile_cfg, Mapping):
        return (f'compile must be True, False or dict(<keyword arguments of torch.compile>), got '
                f'{compile_cfg!r} ({type(compile_cfg).__name__})')
    options = compile_cfg.get('options')
    try:
        torch.compile(abs, **{key: value for key, value in compile_cfg.items() if key != 'options'},
                      options=None if options is None else {})
    except Exception as error:  # TypeError, RuntimeError, torch's InvalidBackend: each one clear line
        return f'compile: {str(error).splitlines()[0]}'
    if options is None:
        return None
    if not isinstance(options, Mapping):
        return f'compile.options must be a dict of Inductor options, e.g. dict(freezing=True), got {options!r}'
    for key, value in options.items():
        problem = inductor_option_problem(str(key).replace('-', '_'), value)
        if problem is not None:
            return f'compile.options.{key}: {problem}'
    return None
