"""A config's ``compile`` setting and its Inductor options, judged as torch.compile judges them but before anything
is built (mmengine compiles after the work dir, the log and the model exist; torch refuses an unknown option with a
list of its several hundred)."""
import typing
from typing import Any, Mapping, Optional

import torch

from mmrmt.models.backbones.arch import nearest_name


def inductor_options_problem(options: Mapping[str, Any]) -> Optional[str]:
    """The first of Inductor ``options`` that torch does not have (the nearest it has named) or that is of another
    type, as 'NAME: what is wrong'; None if none."""
    from torch._inductor import config

    known = config.get_config_copy()
    for key, value in options.items():
        name = str(key).replace('-', '_')
        if name not in known:
            nearest = nearest_name(name, known)
            hint = f'; did you mean {nearest}?' if nearest else ''
            return f'{key}: torch {torch.__version__} Inductor has no option {name!r}{hint}'
        expected = config.get_type(name)
        if typing.get_origin(expected) is None and not isinstance(value, expected):
            return f'{key}: {name} takes a {expected.__name__}, got {value!r} ({type(value).__name__})'
    return None


def compile_setting_problem(compile_cfg: Any) -> Optional[str]:
    """What is wrong with a config's ``compile`` (True, False, None or torch.compile's keyword arguments, which
    torch.compile judges when called, compiling nothing), as one line; None if nothing."""
    if compile_cfg is None or isinstance(compile_cfg, bool):
        return None
    if not isinstance(compile_cfg, Mapping):
        return (f'compile must be True, False or dict(<keyword arguments of torch.compile>), got '
                f'{compile_cfg!r} ({type(compile_cfg).__name__})')
    options = compile_cfg.get('options') or {}
    if not isinstance(options, Mapping):
        return f'compile.options must be a dict of Inductor options, e.g. dict(freezing=True), got {options!r}'
    problem = inductor_options_problem(options)
    if problem is not None:
        return f'compile.options.{problem}'
    try:
        torch.compile(abs, **compile_cfg)
    except Exception as error:  # TypeError, RuntimeError, torch's InvalidBackend: each one clear line
        return f'compile: {str(error).splitlines()[0]}'
    return None
