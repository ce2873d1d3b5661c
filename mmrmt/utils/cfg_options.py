"""``--cfg-options KEY=VALUE ...``, checked before anything is built (mmengine merges any key, so a typo is
ignored and a bad value fails deep inside the run): the pairs' form; values that mmengine's ``DictAction`` cannot
read (``dict(...)``, brackets it refuses) read by Python as data, never evaluated; each key a setting of the config,
of the runner or an argument of the component that receives it, else the nearest is named; known fields' values."""
import argparse
import ast
import inspect
from contextlib import suppress
from typing import Any, Callable, Collection, Dict, Iterable, List, Mapping, Optional, Sequence

from mmengine.config import Config, DictAction
from mmengine.registry import (DATASETS, EVALUATOR, HOOKS, LOG_PROCESSORS, LOOPS, METRICS, MODELS, OPTIM_WRAPPERS,
                               OPTIMIZERS, PARAM_SCHEDULERS, TRANSFORMS, VISBACKENDS, VISUALIZERS, DefaultScope)
from mmengine.runner import Runner

from mmrmt.checkpoint.saved_config import NotPlainData, literal_value
from mmrmt.models.backbones.arch import (NON_NEGATIVE_INT, NON_NEGATIVE_REAL, POSITIVE_INT, ArgKind, check_arg,
                                         nearest_name)
from .preflight import PreflightError

#: Where the classes named by a config's ``type`` keys are registered.
COMPONENT_REGISTRIES = (MODELS, LOOPS, HOOKS, DATASETS, TRANSFORMS, OPTIM_WRAPPERS, OPTIMIZERS,
                        PARAM_SCHEDULERS, EVALUATOR, METRICS, VISUALIZERS, VISBACKENDS, LOG_PROCESSORS)
#: The top-level settings a run reads that a config may leave out: the Runner's arguments and what
#: ``Runner.from_cfg`` and the tools read besides them.
RUN_SETTINGS = frozenset(
    {*inspect.signature(Runner.__init__).parameters} - {'self', 'cfg'}
    | {'runner_type', 'model_wrapper_cfg', 'find_unused_parameters', 'compile', 'amp_loss_scale',
       'tta_model', 'tta_pipeline'})
#: ``SETTING._delete_=True`` replaces SETTING by the dict the other keys under it make; ``COMPONENT.type=NAME``
#: makes COMPONENT another class, whose arguments the other keys under it name.
DELETE_SUFFIX, TYPE_SUFFIX = '._delete_', '.type'
#: A new key this close to an existing one (difflib's ratio) is taken for a typo of it.
TYPO_CUTOFF = 0.8
#: The values the fields the tools know accept, by the last part of the key.
FIELD_KINDS: Dict[str, ArgKind] = dict(
    max_iters=POSITIVE_INT, max_epochs=POSITIVE_INT, val_interval=POSITIVE_INT, batch_size=POSITIVE_INT,
    num_workers=NON_NEGATIVE_INT, lr=NON_NEGATIVE_REAL, weight_decay=NON_NEGATIVE_REAL,
    base_batch_size=POSITIVE_INT)


def add_cfg_options(parser: argparse.ArgumentParser, example: str = 'train_cfg.max_iters=100') -> None:
    """Declare ``--cfg-options KEY=VALUE ...`` on ``parser`` (checked and merged by :func:`apply_cfg_options`)."""
    parser.add_argument(
        '--cfg-options', nargs='+', metavar='KEY=VALUE', default=[],
        help=f'override config settings, e.g. {example}; lists as key="[a,b]" (no spaces)')


def python_value(value: str, pair: str) -> Any:
    """``value`` (of ``pair``, the whole ``KEY=VALUE``) read by Python as data, never evaluated: its literals as
    Python reads them (``dict(NAME=VALUE, ...)`` a dict), anything else as its text, read as ``DictAction`` reads a
    word (``true`` True, ``LinearLR`` text); values apart at the top level a list. A value Python cannot parse (an
    unclosed bracket: the shell split the value at a space) is refused with Python's reason and character."""
    text = f'[{value}]'

    def as_text(node: ast.expr) -> Any:  # what is not a literal; a dict(...) that is not dict(NAME=VALUE, ...)
        if isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'dict':
            entry = ast.get_source_segment(text, node.args[0] if node.args else node)
            raise PreflightError(f'--cfg-options {pair}: the entries of dict(...) are NAME=VALUE, got {entry!r}')
        return DictAction._parse_int_float_bool(ast.get_source_segment(text, node))

    try:
        ast.parse(value, mode='eval')  # Python's reason at the value as given, not at the brackets around it
        values = literal_value(ast.parse(text, mode='eval').body, as_text)
    except SyntaxError as error:
        problem = f'the value does not parse at character {error.offset} ({error.msg})'
    except NotPlainData as error:
        problem = f'the value is not plain data ({error})'
    else:
        return values[0] if len(values) == 1 else values
    raise PreflightError(f'--cfg-options {pair}: {problem}; quote a value with spaces as one argument, and write '
                         'dict(NAME=VALUE, ...) with literals or names as values, other text quoted, e.g. '
                         '\'key=[dict(type=Resize, path="a b/c.jpg")]\'')


def cfg_value(value: str, pair: str) -> Any:
    """``value`` (of ``pair``) as mmengine's ``DictAction`` reads it, else (``dict(...)``, or brackets it cannot
    read) by :func:`python_value`."""
    if 'dict(' not in value:
        with suppress(AssertionError, RecursionError):  # brackets that do not balance; 'f(a,b)', split without end
            return DictAction._parse_iterable(value)
    return python_value(value, pair)


def parse_pairs(pairs: Sequence[str], flag: str, read_value: Callable[[str, str], Any] = cfg_value) -> Dict[str, Any]:
    """``['a.b=1', 'c=x']`` -> ``{'a.b': 1, 'c': 'x'}``, each value ``read_value(VALUE, KEY=VALUE)``: the one reader
    of the tools' ``KEY=VALUE`` options; a :class:`PreflightError` naming ``flag`` for a pair without ``=`` or
    key."""
    options = {}
    for pair in pairs:
        key, equals, value = pair.partition('=')
        if not equals or not key:
            raise PreflightError(f'{flag} takes KEY=VALUE pairs, got {pair!r}; e.g. {key or "KEY"}={value or "VALUE"}, '
                                 'one argument each (quote a value with spaces)')
        options[key] = read_value(value, pair)
    return options


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
    """The keyword arguments ``cls`` takes, None when it takes any (an ``__init__`` with ``**kwargs`` passes
    them to its base class, the OpenMMLab habit, whose arguments count too, up to ``object``: any)."""
    names: List[str] = []
    for klass in cls.__mro__:
        if '__init__' not in vars(klass):
            continue
        try:
            parameters = list(inspect.signature(vars(klass)['__init__']).parameters.values())[1:]
        except (TypeError, ValueError):
            return None
        names += [parameter.name for parameter in parameters
                  if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)]
        if not any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters):
            return names
    return None


def unknown_key_error(key: str, where: str, name: str, existing: Iterable[str], what: str) -> PreflightError:
    """The line for a key part ``name`` that ``what`` (at ``where``) lacks, naming the nearest of its
    ``existing`` keys, or the first few."""
    known = sorted(set(existing) - {'type', 'self'})
    close = nearest_name(name, known)
    hint = (f'; the nearest is {where + "." if where else ""}{close}' if close else
            f'; it has {", ".join(known[:8])}{", ..." if len(known) > 8 else ""}')
    return PreflightError(f'--cfg-options {key}: {what} has no {name!r}{hint}')


def check_key(cfg: Config, key: str, value: Any, replaced: Collection[str], retyped: Mapping[str, Any]) -> None:
    """Fail unless ``key`` names a setting of ``cfg`` or an argument its component takes (keys under a
    setting in ``replaced``, given ``SETTING._delete_=True``, make a new dict and are not checked; a component
    in ``retyped``, given ``COMPONENT.type=NAME``, is checked as of its new type)."""
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
            raise PreflightError(
                f'--cfg-options {key}: {where} is {node!r} in the config, not a dict, so it has no '
                f'{".".join(parts[depth:])}; replace the whole setting: --cfg-options {where}._delete_=True '
                f'{where}.type=... {key}={value}')
        if part in node or part.startswith('_'):
            node = node.get(part)
            continue
        cls = component_class(dict(type=retyped[where]) if where in retyped else node)
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


def apply_cfg_options(cfg: Config, pairs: Optional[Sequence[str]]) -> Config:
    """Check the ``KEY=VALUE`` ``pairs`` against ``cfg``, then merge them into it (in place).

    Args:
        cfg (Config): The config.
        pairs (Sequence[str], optional): ``--cfg-options`` as given.

    Returns:
        Config: ``cfg``.

    Raises:
        PreflightError: See :func:`parse_pairs`, :func:`python_value` and :func:`check_key`; a field the tools know
            (:data:`FIELD_KINDS`) with a value of the wrong type or range.
    """
    options = parse_pairs(pairs or [], '--cfg-options')
    replaced = {key[:-len(DELETE_SUFFIX)] for key, value in options.items()
                if key.endswith(DELETE_SUFFIX) and value is True}
    retyped = {key[:-len(TYPE_SUFFIX)]: value for key, value in options.items() if key.endswith(TYPE_SUFFIX)}
    with DefaultScope.overwrite_default_scope(cfg.get('default_scope')):
        for key, value in options.items():
            check_key(cfg, key, value, replaced, retyped)
            kind = FIELD_KINDS.get(key.rsplit('.', 1)[-1])
            if kind is not None:
                try:
                    check_arg('--cfg-options', key, value, kind)
                except (TypeError, ValueError) as error:
                    raise PreflightError(str(error).rstrip('.')) from None
    cfg.merge_from_dict(options)
    return cfg
