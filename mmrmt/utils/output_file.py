"""Check a tool's output file before the tool builds or computes anything."""
import os
import os.path as osp
from typing import Sequence

from .preflight import PreflightError


def check_output_file(path: str, force: bool, sources: Sequence[str] = ()) -> None:
    """Fail unless ``path`` may be written.

    Args:
        path (str): The destination.
        force (bool): Whether an existing file may be replaced.
        sources (Sequence[str]): Inputs of the run, which it must never replace.

    Raises:
        PreflightError: ``path`` is one of ``sources``, a folder, an existing
            file without ``force``, or in a folder that cannot be created or
            written.
    """
    if any(osp.exists(source) and osp.exists(path) and osp.samefile(source, path) for source in sources):
        raise PreflightError(f'the output {path} is also an input of the run; choose another path')
    if osp.isdir(path):
        raise PreflightError(f'the output {path} is a folder; name a file')
    if osp.exists(path) and not force:
        raise PreflightError(f'{path} exists; pass --force to replace it')
    folder = osp.dirname(osp.abspath(path))
    existing = folder
    while not osp.isdir(existing):
        existing = osp.dirname(existing)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PreflightError(f'cannot write into {existing} (for the output {path})')
