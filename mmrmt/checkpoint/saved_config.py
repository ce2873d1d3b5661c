"""The config an mmengine run saved in its checkpoints (``meta['cfg']``, Python text that ``Config.fromstring``
would run), read as data and never run: ``name = literal`` statements only (numbers, strings, ``True`` / ``False`` /
``None``, lists, tuples, sets, dicts, ``dict(...)`` with keywords after at most one ``{...}``), else the whole text is
refused. The size, bracket depth and tokens are bounded before parsing, so no text can exhaust the parser; values
are finite numbers of at most :data:`MAX_NUMBER_CHARS` characters, hashable keys, strings without mmengine's
``{{ ... }}`` templates."""
import ast
import io
import math
import re
import tokenize
from functools import partial
from typing import Any, Callable, Dict, Optional

#: The longest text read: 40 times the longest zoo config's (26,258 characters, 2026-12-01).
MAX_TEXT_CHARS = 1_000_000
#: The deepest bracket nesting read (the zoo configs nest 6 deep).
MAX_NESTING = 50
#: The longest number read (a float's repr has at most 24; a longer one could pass Python's int-string limit).
MAX_NUMBER_CHARS = 50
#: The operator tokens of literals; ``+`` / ``-`` only as the sign of a number, after the start of a value.
LITERAL_OPERATORS, SIGNS = frozenset('()[]{},:='), frozenset('+-')
OPENERS, CLOSERS = frozenset('([{'), frozenset(')]}')
SIGN_FOLLOWS = OPENERS | frozenset(',:=')
#: mmengine's templates, substituted by ``Config.fromfile`` / ``fromstring`` in the text.
TEMPLATE = re.compile(r'\{\{.*?\}\}', re.DOTALL)
#: The ``meta`` key whose text mmengine's ``Runner.resume`` runs (``Config.fromstring``) for the previous run's
#: ``gpu_ids`` (mmcv 1.x scripts saved their config there).
RESUMED_CONFIG_KEY = 'config'


class NotPlainData(ValueError):
    """The saved text holds something other than plain data (a call, a name, an import...)."""


def scan_tokens(text: str) -> None:
    """Fail before parsing on text no literal needs (an operator, a run of signs, deep nesting): :class:`NotPlainData`
    naming the line and the token; ``SyntaxError`` or ``tokenize.TokenError`` where the text is not Python."""
    depth, previous_op = 0, None  # the previous token's string where it is an operator
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        line, string, is_op = token.start[0], token.string, token.type == tokenize.OP
        if previous_op in SIGNS and token.type != tokenize.NUMBER:
            raise NotPlainData(f'line {line}: the sign {previous_op} is not before a number')
        if token.type == tokenize.NUMBER and len(string) > MAX_NUMBER_CHARS:
            raise NotPlainData(f'line {line}: a number of {len(string):,} characters (at most {MAX_NUMBER_CHARS} '
                               'are read)')
        if is_op and (string not in LITERAL_OPERATORS | SIGNS or string in SIGNS and previous_op not in SIGN_FOLLOWS):
            raise NotPlainData(f'line {line}: the operator {string!r} is not part of a literal')
        depth += is_op and (string in OPENERS) - (string in CLOSERS)
        if depth > MAX_NESTING:
            raise NotPlainData(f'line {line}: brackets nested more than {MAX_NESTING} deep')
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous_op = string if is_op else None


def checked_constant(node: ast.Constant) -> Any:
    """The value of a constant: a finite number (``1e999`` reads as inf), a string without a template."""
    value = node.value
    if isinstance(value, (float, complex)) and not all(math.isfinite(part) for part in (value.real, value.imag)):
        raise NotPlainData(f'line {node.lineno}: a number too large to be finite (it reads as {value!r})')
    if isinstance(value, (str, bytes)):
        text = value if isinstance(value, str) else value.decode('latin-1')
        if TEMPLATE.search(text):
            raise NotPlainData(f'line {node.lineno}: the string holds the template '
                               f'{TEMPLATE.search(text).group()[:40]!r}, which mmengine would substitute')
    return value


def literal_value(node: ast.expr, other: Optional[Callable[[ast.expr], Any]] = None) -> Any:
    """The value of a literal expression; of anything else (in it) ``other(node)`` if given, else
    :class:`NotPlainData`."""
    value_of = partial(literal_value, other=other)
    if isinstance(node, ast.Constant):
        return checked_constant(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(
            node.operand, ast.Constant) and isinstance(node.operand.value, (int, float, complex)):
        value = checked_constant(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple)):
        values = [value_of(element) for element in node.elts]
        return list(values) if isinstance(node, ast.List) else tuple(values)
    try:
        if isinstance(node, ast.Set):
            return {value_of(element) for element in node.elts}
        if isinstance(node, ast.Dict) and None not in node.keys:
            return {value_of(key): value_of(value) for key, value in zip(node.keys, node.values)}
    except TypeError as error:  # Python's own refusal: "unhashable type: 'list'"
        raise NotPlainData(f'line {node.lineno}: a dict key or set element must be hashable ({error})') from None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == 'dict'
            and len(node.args) <= 1 and all(isinstance(arg, ast.Dict) and None not in arg.keys for arg in node.args)
            and all(keyword.arg is not None for keyword in node.keywords)):
        value = value_of(node.args[0]) if node.args else {}
        value.update({keyword.arg: value_of(keyword.value) for keyword in node.keywords})
        return value
    if other is not None:
        return other(node)
    raise NotPlainData(f'line {node.lineno}: {ast.unparse(node)[:80]!r} is not a literal')


def read_saved_config(text: str, source: str = 'a checkpoint') -> Dict[str, Any]:
    """The settings of a saved config ``text``, each ``name = literal`` line read as data.

    Args:
        text (str): The text, e.g. ``checkpoint['meta']['cfg']``.
        source (str): Where it comes from, for messages (e.g. ``'run.pth (meta.cfg)'``).

    Raises:
        ValueError: The text is not Python, or holds anything but ``name = literal`` statements.
    """
    refused = f'the config saved in {source} is not plain data, so it was not read (nor run)'
    fix = 'mmengine writes only literals there: use a checkpoint from a source you trust'
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f'{refused}: it is {len(text):,} characters long (at most {MAX_TEXT_CHARS:,} '
                         f'are read); {fix}')
    try:
        try:
            scan_tokens(text)
        except (SyntaxError, tokenize.TokenError) as error:  # what came before was scanned:
            ast.parse(text)  # the parser raises SyntaxError at that place
            raise SyntaxError(str(error.args[0])) from None
        settings: Dict[str, Any] = {}
        for statement in ast.parse(text).body:
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)):
                raise NotPlainData(f'line {statement.lineno}: a {type(statement).__name__} statement, '
                                   'not name = value')
            settings[statement.targets[0].id] = literal_value(statement.value)
        return settings
    except NotPlainData as error:
        raise ValueError(f'{refused}: {error}; {fix}') from None
    except SyntaxError as error:
        raise ValueError(f'the config saved in {source} is not readable: line {error.lineno}: '
                         f'{error.msg}') from None


def resumed_config(checkpoint: dict, source: str = 'a checkpoint') -> Optional[Dict[str, Any]]:
    """The settings of ``meta['config']`` read as data (a ``ValueError`` if not plain data); None without one."""
    meta = checkpoint.get('meta')
    if not (isinstance(meta, dict) and RESUMED_CONFIG_KEY in meta):
        return None
    return read_saved_config(str(meta[RESUMED_CONFIG_KEY]), f'{source} (meta.{RESUMED_CONFIG_KEY})')


def make_resumed_config_inert(checkpoint: dict) -> None:
    """Leave in ``meta['config']`` of a loaded checkpoint (in memory) only what mmengine's resume uses, the
    length of ``gpu_ids`` (read as data): ``gpu_ids = [0, 1]`` or ``gpu_ids = None``; the key is dropped when the
    original is not plain data."""
    try:
        settings = resumed_config(checkpoint)
    except ValueError:
        del checkpoint['meta'][RESUMED_CONFIG_KEY]
        return
    if settings is not None:
        gpu_ids = settings.get('gpu_ids')
        kept = list(range(len(gpu_ids))) if isinstance(gpu_ids, (list, tuple)) else None
        checkpoint['meta'][RESUMED_CONFIG_KEY] = f'gpu_ids = {kept}\n'
