"""``--cfg-options KEY=VALUE ...``: the one declaration every tool uses, and the
checks that make a bad override one line before anything is built or written.

mmengine merges any key into a config, so a typo (``train_cfg.max_iter=2``)
is silently ignored by the run and a bad value (``train_dataloader.batch_size=0``)
fails deep inside it. Here each override is checked against the config:

* ``KEY=VALUE`` form (a missing ``=``), and brackets in the value that
  balance (``[dict(a=1`` would otherwise be merged as a string, or fail
  inside mmengine's parser); a value with ``dict(...)`` is read by
  :mod:`mmrmt.utils.cfg_value` (mmengine's parser cannot);
* the key exists in the config, is a setting the runner reads
  (:data:`RUN_SETTINGS`), or is a constructor argument of the component (a
  dict with a ``type``) that receives it, of the type the same overrides give
  it where they set one (``optim_wrapper.type=AmpOptimWrapper
  optim_wrapper.dtype=float16``); else the message names the nearest existing
  key (an unknown top-level key too: no run would read it);
* a key that goes through a setting that is not a dict (e.g. ``init_cfg`` is
  None) names the way to replace that setting;
* the values of the fields the tools know (iterations, epochs, batch size,
  learning rate...) have the right type and range.

Whether the model still builds is checked by :func:`mmrmt.utils.build_cpu_model`.
"""
import argparse
import inspect
from typing import Any, Collection, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from mmengine.config import Config, DictAction
from mmengine.registry import (DATASETS, EVALUATOR, HOOKS, LOG_PROCESSORS, LOOPS, METRICS, MODELS, OPTIM_WRAPPERS,
                               OPTIMIZERS, PARAM_SCHEDULERS, TRANSFORMS, VISBACKENDS, VISUALIZERS, DefaultScope)
from mmengine.runner import Runner

from mmrmt.models.backbones.arch import (NON_NEGATIVE_INT, NON_NEGATIVE_REAL, POSITIVE_INT, ArgKind, check_arg,
                                         nearest_name)
from .cfg_value import parse_value
from .preflight import PreflightError

#: Where the classes named by a config's ``type`` keys are registered.
COMPONENT_REGISTRIES = (MODELS, LOOPS, HOOKS, DATASETS, TRANSFORMS, OPTIM_WRAPPERS, OPTIMIZERS,
                        PARAM_SCHEDULERS, EVALUATOR, METRICS, VISUALIZERS, VISBACKENDS, LOG_PROCESSORS)

#: The top-level settings a run reads that a config may leave out: the Runner's
#: arguments and what ``Runner.from_cfg`` and the tools read besides them.
RUN_SETTINGS = frozenset(
    {*inspect.signature(Runner.__init__).parameters} - {'self', 'cfg'}
    | {'runner_type', 'model_wrapper_cfg', 'find_unused_parameters', 'compile', 'amp_loss_scale',
       'tta_model', 'tta_pipeline'})

#: Brackets of a value, closers to openers.
BRACKETS = {')': '(', ']': '[', '}': '{'}

#: ``SETTING._delete_=True`` replaces SETTING by the dict the other keys under it make.
DELETE_SUFFIX = '._delete_'

#: ``COMPONENT.type=NAME`` makes COMPONENT another class, whose arguments the other keys under it name.
TYPE_SUFFIX = '.type'

#: A new key this close to an existing one (difflib's ratio) is taken for a typo of it.
TYPO_CUTOFF = 0.8

#: The values the fields the tools know accept, by the last part of the key.
FIELD_KINDS: Dict[str, ArgKind] = dict(
    max_iters=POSITIVE_INT, max_epochs=POSITIVE_INT, val_interval=POSITIVE_INT, batch_size=POSITIVE_INT,
    num_workers=NON_NEGATIVE_INT, lr=NON_NEGATIVE_REAL, weight_decay=NON_NEGATIVE_REAL,
    base_batch_size=POSITIVE_INT)


def add_cfg_options(parser: argparse.ArgumentParser, example: str = 'train_cfg.max_iters=100') -> None:
    """Declare ``--cfg-options KEY=VALUE ...`` on ``parser`` (the pairs are kept as
    given, to be checked and merged by :func:`apply_cfg_options`)."""
    parser.add_argument(
        '--cfg-options', nargs='+', metavar='KEY=VALUE', default=[],
        help=f'override config settings, e.g. {example}; lists as key="[a,b]" (no spaces)')


def parse_cfg_options(pairs: Sequence[str]) -> Dict[str, Any]:
    """``['a.b=1', 'c=x']`` -> ``{'a.b': 1, 'c': 'x'}``, values parsed as mmengine's DictAction does.

    Raises:
        PreflightError: A pair has no ``=`` or no key.
    """
    options = {}
    for pair in pairs:
        key, equals, value = pair.partition('=')
        if not equals or not key:
            raise PreflightError(f'--cfg-options takes KEY=VALUE pairs, got {pair!r}; e.g. '
                                 f'{pair or "train_cfg.max_iters"}=VALUE')
        problem = bracket_problem(value)
        if problem is not None:
            raise PreflightError(f'--cfg-options {pair}: {problem} (a value with spaces must be one '
                                 'argument: quote it, e.g. \'key=[dict(a=1), dict(a=2)]\')')
        # mmengine's DictAction for what it reads, mmrmt's parser for dict(...), which it cannot
        options[key] = parse_value(value, pair) if 'dict(' in value else DictAction._parse_iterable(value)
    return options


def bracket_problem(value: str) -> Optional[str]:
    """Where the brackets of ``value`` do not balance (quoted text skipped), None if they do."""
    opened: List[Tuple[str, int]] = []
    quote = None
    for position, char in enumerate(value, 1):
        if quote is not None:
            quote = None if char == quote else quote
        elif char in '\'"':
            quote = char
        elif char in '([{':
            opened.append((char, position))
        elif char in BRACKETS:
            if not opened or opened[-1][0] != BRACKETS[char]:
                return f'the {char!r} at character {position} of the value closes no {BRACKETS[char]!r}'
            opened.pop()
    if quote is not None:
        return f'the value has an unclosed {quote}'
    if opened:
        char, position = opened[0]
        return f'the {char!r} at character {position} of the value is never closed'
    return None


def component_class(node: Mapping) -> Optional[type]:
    """The registered class a config dict's ``type`` names, if it can be found."""
    kind = node.get('type')
    if not isinstance(kind, str):
        return kind if inspect.isclass(kind) else None
    for registry in COMPONENT_REGISTRIES:
        with registry.switch_scope_and_registry(None) as scoped:  # the default scope's registry
            found = scoped.get(kind)
        if found is not None:
            return found
    return None


def constructor_arguments(cls: type) -> Optional[List[str]]:
    """The keyword arguments ``cls`` takes; None when it takes any.

    An ``__init__`` with ``**kwargs`` is taken to pass them on to its base
    class (the OpenMMLab habit, e.g. ``UPerHead`` to ``BaseDecodeHead``), whose
    arguments then count too; reaching ``object`` means any keyword goes.
    """
    names: List[str] = []
    for klass in cls.__mro__:
        if '__init__' not in vars(klass):
            continue
        try:
            parameters = list(inspect.signature(vars(klass)['__init__']).parameters.values())
        except (TypeError, ValueError):
            return None
        names += [parameter.name for parameter in parameters[1:]
                  if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]
        if not any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
            return names
    return None


def unknown_key_error(key: str, where: str, name: str, existing: Iterable[str], what: str) -> PreflightError:
    """The one line for a key part ``name`` that ``where`` does not have, with the
    nearest of its ``existing`` keys (or the first few, when none is near)."""
    known = sorted(set(existing) - {'type', 'self'})
    close = nearest_name(name, known)
    if close:
        hint = f'; the nearest is {where + "." if where else ""}{close}'
    else:
        hint = f'; it has {", ".join(known[:8])}{", ..." if len(known) > 8 else ""}'
    return PreflightError(f'--cfg-options {key}: {what} has no {name!r}{hint}')


def check_key(cfg: Config, key: str, value: Any, replaced: Collection[str] = (),
              retyped: Optional[Mapping[str, Any]] = None) -> None:
    """Fail unless ``key`` names a setting of ``cfg`` or an argument its component takes.

    Keys under a setting in ``replaced`` (given ``SETTING._delete_=True``)
    make a new dict and are not checked; a component in ``retyped`` (given
    ``COMPONENT.type=NAME``, setting -> NAME) is checked as of its new type.

    Raises:
        PreflightError: The key is unknown, or it goes through a setting that
            is not a dict.
    """
    node: Any = cfg._cfg_dict
    parts = key.split('.')
    for depth, part in enumerate(parts):
        where = '.'.join(parts[:depth])
        if isinstance(node, (list, tuple)):
            if not (part.isdigit() and int(part) < len(node)):
                raise PreflightError(f'--cfg-options {key}: {where} is a list of {len(node)} entries; '
                                     f'{part!r} is not one of its indices 0-{len(node) - 1}')
            node = node[int(part)]
            continue
        if where in replaced:
            return
        if not isinstance(node, Mapping):
            rest = '.'.join(parts[depth:])
            raise PreflightError(
                f'--cfg-options {key}: {where} is {node!r} in the config, not a dict, so it has no '
                f'{rest}; replace the whole setting: --cfg-options {where}._delete_=True '
                f'{where}.type=... {key}={value}')
        if part in node or part.startswith('_'):
            node = node.get(part)
            continue
        cls = component_class(dict(type=retyped[where]) if where in (retyped or {}) else node)
        if cls is not None:
            arguments = constructor_arguments(cls)
            if arguments is None or part in arguments:
                return  # a new argument of the component: building it checks the value
            raise unknown_key_error(key, where, part, [*node, *arguments], f'{cls.__name__} ({where})')
        if depth == 0:
            if part in RUN_SETTINGS:
                return  # a setting the runner reads, which the config leaves at its default
            raise unknown_key_error(key, where, part, [*node, *RUN_SETTINGS], 'the config')
        if depth == len(parts) - 1 and nearest_name(part, node, TYPO_CUTOFF) is None:
            return  # a new setting of a plain dict, like none it has
        raise unknown_key_error(key, where, part, node, where)


def check_value(key: str, value: Any) -> None:
    """Fail when a field the tools know gets a value of the wrong type or range."""
    kind = FIELD_KINDS.get(key.rsplit('.', 1)[-1])
    if kind is None:
        return
    try:
        check_arg('--cfg-options', key, value, kind)
    except (TypeError, ValueError) as error:
        raise PreflightError(str(error).rstrip('.')) from None


def apply_cfg_options(cfg: Config, pairs: Optional[Sequence[str]]) -> Config:
    """Check ``--cfg-options`` pairs against ``cfg``, then merge them into it.

    Args:
        cfg (Config): The loaded config (changed in place).
        pairs (Sequence[str], optional): The ``KEY=VALUE`` strings as given.

    Returns:
        Config: ``cfg``.

    Raises:
        PreflightError: See :func:`parse_cfg_options`, :func:`check_key`,
            :func:`check_value`.
    """
    options = parse_cfg_options(pairs or [])
    if not options:
        return cfg
    replaced = {key[:-len(DELETE_SUFFIX)] for key, value in options.items()
                if key.endswith(DELETE_SUFFIX) and value is True}
    retyped = {key[:-len(TYPE_SUFFIX)]: value for key, value in options.items() if key.endswith(TYPE_SUFFIX)}
    with DefaultScope.overwrite_default_scope(cfg.get('default_scope')):
        for key, value in options.items():
            check_key(cfg, key, value, replaced, retyped)
            check_value(key, value)
    cfg.merge_from_dict(options)
    return cfg
