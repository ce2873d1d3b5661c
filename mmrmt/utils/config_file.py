"""Load a config file so that any problem is one line naming the file: mmengine lets anything a config raises escape
as a traceback, names no file in a syntax error (its parse is given none), and recurses over circular ``_base_``
files until Python's limit. The files its ``Config._file2dict`` was reading when it failed name the culprit."""
import os.path as osp
import traceback
from pathlib import Path
from typing import List

from mmengine.config import Config

from mmrmt.checkpoint import one_line_reason
from .preflight import PreflightError


def files_being_read(error: BaseException) -> List[str]:
    """The config files mmengine's ``Config._file2dict`` was reading when ``error`` was raised (normalised,
    absolute), the outermost first: a config, then each ``_base_`` file down to the one that raised (a frame that
    re-raised is in the traceback twice, kept once)."""
    frames = dict.fromkeys(frame for frame, _ in traceback.walk_tb(error.__traceback__)
                           if frame.f_code.co_name == '_file2dict' and 'filename' in frame.f_locals)
    return [osp.normpath(osp.abspath(frame.f_locals['filename'])) for frame in frames]


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
    try:
        return Config.fromfile(path)
    except Exception as error:  # a config is Python: it can raise anything
        files = files_being_read(error)
        again = next((index for index, file in enumerate(files) if file in files[:index]), None)
        if isinstance(error, RecursionError) and again is not None:
            circle = files[files.index(files[again]):again + 1]
            raise PreflightError(f'config {path}: its _base_ files are circular ({" -> ".join(circle)}); '
                                 f'remove the _base_ entry of {circle[-2]} that names {circle[-1]}') from None
        if isinstance(error, SyntaxError) and files:
            raise PreflightError(f'syntax error in config {files[-1]}, line {error.lineno}: {error.msg}') from error
        raise PreflightError(f'config {path} could not be loaded: {one_line_reason(error)}') from error
