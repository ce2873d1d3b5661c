"""The config an mmengine run saved in its checkpoints, read as data and never run.

mmengine stores the run's config as Python text in ``meta['cfg']`` (its
``pretty_text``: one ``name = value`` line per setting, values made of
literals and ``dict(key=value, ...)``). mmengine's ``Config.fromstring``
would execute that text, so a downloaded file could run any code; here it is
parsed with :mod:`ast` and only literals are accepted: numbers, strings,
``True`` / ``False`` / ``None``, lists, tuples, sets, ``{...}`` dicts and
``dict(...)`` with keyword arguments (and at most one ``{...}`` before them,
as mmengine writes keys that are not names). Any other call, name, import or
statement makes the whole text refused, unread.
"""
import ast
from typing import Any, Dict, Optional

#: The one callable a saved config may name: ``dict(key=value, ...)``.
DICT_CALL = 'dict'


class NotPlainData(ValueError):
    """The saved text holds something other than plain data (a call, a name, an import...)."""


def literal_value(node: ast.expr) -> Any:
    """The value of a literal expression; :class:`NotPlainData` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(
            node.operand, ast.Constant) and isinstance(node.operand.value, (int, float, complex)):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        values = [literal_value(element) for element in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](values)
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {literal_value(key): literal_value(value) for key, value in zip(node.keys, node.values)}
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == DICT_CALL
            and len(node.args) <= 1 and all(isinstance(arg, ast.Dict) for arg in node.args)
            and all(keyword.arg is not None for keyword in node.keywords)):
        value = literal_value(node.args[0]) if node.args else {}
        value.update({keyword.arg: literal_value(keyword.value) for keyword in node.keywords})
        return value
    raise NotPlainData(f'line {node.lineno}: {ast.unparse(node)[:80]!r} is not a literal')


def read_saved_config(text: str, source: str = 'a checkpoint') -> Dict[str, Any]:
    """The settings of a saved config text, each ``name = literal`` line read as data.

    Args:
        text (str): The text, e.g. ``checkpoint['meta']['cfg']``.
        source (str): Where it comes from, for error messages (e.g.
            ``'run.pth (meta.cfg)'``).

    Returns:
        dict: Setting name -> value (dicts for ``dict(...)``).

    Raises:
        ValueError: The text is not Python, or holds anything but
            ``name = literal`` statements (it is then not run).
    """
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise ValueError(f'the config saved in {source} is not readable: line '
                         f'{error.lineno}: {error.msg}') from None
    settings: Dict[str, Any] = {}
    try:
        for statement in tree.body:
            if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)):
                raise NotPlainData(f'line {statement.lineno}: a {type(statement).__name__} statement, '
                                   'not name = value')
            settings[statement.targets[0].id] = literal_value(statement.value)
    except NotPlainData as error:
        raise ValueError(f'the config saved in {source} is not plain data, so it was '
                         f'not read (nor run): {error}') from None
    return settings


#: The ``meta`` key whose text mmengine's ``Runner.resume`` runs (``Config.fromstring``)
#: to compare the previous run's ``gpu_ids``; mmcv 1.x scripts saved their config under it.
RESUMED_CONFIG_KEY = 'config'


def resumed_config(checkpoint: dict, source: str = 'a checkpoint') -> Optional[Dict[str, Any]]:
    """The settings of ``meta['config']``, read as data; None when the checkpoint has none.

    Raises:
        ValueError: The text is not plain data: mmengine's resume would run code.
    """
    meta = checkpoint.get('meta')
    if not (isinstance(meta, dict) and RESUMED_CONFIG_KEY in meta):
        return None
    return read_saved_config(str(meta[RESUMED_CONFIG_KEY]), f'{source} (meta.{RESUMED_CONFIG_KEY})')


def make_resumed_config_inert(checkpoint: dict) -> None:
    """Leave in ``meta['config']`` of a loaded checkpoint only plain data saying the same.

    mmengine's ``Runner.resume`` executes that text to compare the previous
    run's ``gpu_ids``; after this (in memory, the file is untouched) it holds
    ``gpu_ids = <literal>``, read from the original as data, or, when the
    original is not plain data, the key is dropped (the check is skipped,
    nothing is run). A checkpoint without the key is left as it is.
    """
    try:
        settings = resumed_config(checkpoint)
    except ValueError:
        del checkpoint['meta'][RESUMED_CONFIG_KEY]
        return
    if settings is not None:
        checkpoint['meta'][RESUMED_CONFIG_KEY] = f"gpu_ids = {settings.get('gpu_ids')!r}\n"
