"""Write a tool's output file safely: checked first, replaced atomically.

A tool checks its destination before it builds or computes anything
(:func:`check_output_file`), then writes into a temporary file beside it and
moves that over the destination only once it is complete and proven
(:func:`atomic_output`): an interrupted or failing run leaves the user's file
as it was.
"""
import os
import os.path as osp
import tempfile
from contextlib import contextmanager
from typing import Iterator, Sequence

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


@contextmanager
def atomic_output(path: str) -> Iterator[str]:
    """Yield a temporary path beside ``path``; on a normal exit it replaces ``path``.

    Whatever is written to the temporary path, and any check run inside the
    ``with`` block, happens before ``path`` changes; on an exception the
    temporary file is removed and ``path`` is untouched.

    Example:
        >>> with atomic_output('out.pth') as tmp:
        ...     torch.save(weights, tmp)
        ...     torch.load(tmp)  # prove it before it replaces out.pth
    """
    folder = osp.dirname(osp.abspath(path))
    os.makedirs(folder, exist_ok=True)
    stem, suffix = osp.splitext(osp.basename(path))
    handle, tmp = tempfile.mkstemp(prefix=f'.{stem}.', suffix=f'.tmp{suffix}', dir=folder)
    os.close(handle)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if osp.exists(tmp):
            os.remove(tmp)
