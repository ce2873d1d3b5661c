"""Load a config file so that any problem is one line naming the file (mmengine lets anything a config raises escape
as a traceback, and recurses over circular ``_base_`` files until Python's limit)."""
import ast
import os.path as osp
from pathlib import Path
from typing import List, Tuple, Union

from mmengine.config import Config

from mmrmt.checkpoint import one_line_reason
from .preflight import PreflightError


def local_bases(tree: ast.Module, file: str) -> List[str]:
    """The local ``_base_`` files a parsed config names (``scope::`` ones skipped)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == '_base_' for target in node.targets):
            try:
                bases = ast.literal_eval(node.value)
            except ValueError:  # not a literal: mmengine will say why
                return []
            bases = [bases] if isinstance(bases, str) else bases
            return [osp.normpath(osp.join(osp.dirname(file), base)) for base in bases
                    if isinstance(base, str) and '::' not in base]
    return []


def base_problem(path: str, chain: Tuple[str, ...] = ()) -> Union[List[str], SyntaxError, None]:
    """The first circle of local ``_base_`` files from ``path`` (normalised, absolute; a file repeated at its end:
    mmengine would recurse until Python's limit), or else the first syntax error in them (parsed, not run)."""
    if path in chain:
        return [*chain[chain.index(path):], path]
    try:
        tree = ast.parse(Path(path).read_text(), filename=path)
    except SyntaxError as error:
        return error
    except (OSError, ValueError):  # reported by mmengine
        return None
    found = None
    for base in local_bases(tree, path):
        problem = base_problem(base, (*chain, path))
        if isinstance(problem, list):
            return problem
        found = found or problem
    return found


def read_config(path: str) -> Config:
    """Load a config file.

    Raises:
        PreflightError: The file is missing or a folder, its ``_base_`` files are circular, or it (or a base)
            has a syntax error or fails when run.
    """
    if osp.isdir(path):
        examples = sorted(Path(path).glob('*.py'))[:1]
        raise PreflightError(f'config {path} is a folder, not a config file; name one of its files'
                             + (f', e.g. {examples[0]}' if examples else ''))
    if not osp.isfile(path):
        raise PreflightError(f'config file not found: {path}')
    problem = base_problem(osp.normpath(osp.abspath(path)))
    if isinstance(problem, list):
        raise PreflightError(f'config {path}: its _base_ files are circular ({" -> ".join(problem)}); '
                             f'remove the _base_ entry of {problem[-2]} that names {problem[-1]}')
    try:
        return Config.fromfile(path)
    except Exception as error:  # a config is Python: it can raise anything
        if isinstance(error, SyntaxError) and problem is not None:
            raise PreflightError(f'syntax error in config {problem.filename}, line {problem.lineno}: '
                                 f'{problem.msg}') from error
        raise PreflightError(f'config {path} could not be loaded: {one_line_reason(error)}') from error
