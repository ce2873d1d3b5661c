"""The value of a ``--cfg-options KEY=VALUE`` pair holding ``dict(...)``, parsed without running it.

mmengine's ``DictAction`` reads lists and tuples of numbers, booleans and
strings, but not ``dict(...)``: ``key=dict(a=1,b=2)`` recurses until Python's
limit, and ``'key=[dict(a=1), dict(a=2)]'`` becomes a list of strings. Here a
value is read by a small recursive parser (never ``eval``):

* ``dict(k=v, ...)``: a dict, keys identifiers;
* ``[a, b]`` a list, ``(a, b)`` a tuple, ``a, b`` at the top a list;
* anything else a scalar as ``DictAction`` reads it: int, float,
  ``true``/``false`` (any case), ``None``, else a string (quotes removed).
"""
from typing import Any, Iterator, List, Tuple

from mmengine.config import DictAction

from .preflight import PreflightError

#: Brackets a value nests, openers to closers.
CLOSERS = {'(': ')', '[': ']', '{': '}'}


def unquoted(text: str) -> Iterator[Tuple[int, str, int]]:
    """(position, character, bracket depth after it) of each character of ``text`` outside quotes."""
    depth, quote = 0, None
    for position, char in enumerate(text):
        if quote is not None:
            quote = None if char == quote else quote
            continue
        if char in '\'"':
            quote = char
            continue
        depth += (char in CLOSERS) - (char in CLOSERS.values())
        yield position, char, depth


def split_top_level(text: str) -> List[str]:
    """``text`` cut at the commas outside brackets and quotes (the brackets balance: checked before)."""
    cuts = [position for position, char, depth in unquoted(text) if char == ',' and depth == 0]
    parts = [text[start + 1:end] for start, end in zip([-1, *cuts], [*cuts, len(text)])]
    return [part.strip() for part in parts if part.strip()]


def encloses(text: str, opener: str) -> bool:
    """Whether ``text`` is one bracketed group, ``opener`` ... its closer (not ``(a), (b)``)."""
    if not (text.startswith(opener) and text.endswith(CLOSERS[opener])):
        return False
    return all(depth > 0 for position, _, depth in unquoted(text) if position < len(text) - 1)


def parse_dict_call(inside: str, pair: str) -> dict:
    """The dict that ``dict(<inside>)`` writes."""
    result = {}
    for entry in split_top_level(inside):
        key, equals, value = entry.partition('=')
        key = key.strip()
        if not equals or not key.isidentifier():
            raise PreflightError(f'--cfg-options {pair}: the entries of dict(...) are NAME=VALUE, got {entry!r}')
        result[key] = parse_value(value, pair)
    return result


def parse_value(text: str, pair: str) -> Any:
    """The value ``text`` writes (see the module's rules).

    Args:
        text (str): The value, or a part of it.
        pair (str): The whole ``KEY=VALUE``, for messages.

    Raises:
        PreflightError: A ``dict(...)`` entry is not ``NAME=VALUE``.
    """
    text = text.strip()
    if text.startswith('dict(') and encloses(text[4:], '('):
        return parse_dict_call(text[5:-1], pair)
    for opener, kind in (('[', list), ('(', tuple)):
        if encloses(text, opener):
            return kind(parse_value(part, pair) for part in split_top_level(text[1:-1]))
    parts = split_top_level(text)
    if len(parts) > 1:
        return [parse_value(part, pair) for part in parts]
    return DictAction._parse_int_float_bool(text.strip('\'"'))
