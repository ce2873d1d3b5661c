"""The one error of our tools (:class:`PreflightError`, ended by :func:`run_main` as one line) and the checks of
single values run before anything is built: paths to write, ``--device``, ``--shape``, the modules a tool needs."""
import importlib.util
import os
import os.path as osp
import sys
import warnings
from contextlib import contextmanager, suppress
from typing import Callable, Iterable, Iterator, Optional

import torch

from mmrmt.atomic_file import UnwritableError
from mmrmt.checkpoint import CheckpointRefusedError
from mmrmt.run_claim import ClaimError

#: The largest input: 4096 pixels a side, 4096x1024 in all (four times the papers' test sizes); the memory
#: of full-attention stages grows with the square of the pixels.
MAX_SIDE, MAX_PIXELS = 4096, 4096 * 1024
#: How to install what the deployment tools need.
DEPLOY_HINT = 'install the deploy extra: pip install -e ".[deploy]"'


class PreflightError(RuntimeError):
    """A bad input a tool reports as one line, found before anything is built or written wherever it can be."""


def run_main(main: Callable[[], object]) -> None:
    """Run a tool's ``main()`` (``if __name__ == '__main__': run_main(main)``); a :class:`PreflightError`, a
    refused checkpoint, an output no file can be made for, or a work dir or output another run holds ends the
    process with ``error: <message>`` (one line on stderr), exit status 1. Any other exception is a bug and keeps
    its traceback."""
    # setuptools' deprecation notice, which mmengine's imports trigger, is no news to the user
    warnings.filterwarnings('ignore', message='pkg_resources is deprecated')
    try:
        main()
    except (PreflightError, CheckpointRefusedError, ClaimError, UnwritableError) as error:
        sys.exit(f'error: {error}')


@contextmanager
def file_errors_as_tool_errors() -> Iterator[None]:
    """Within the block, a missing or unreadable file (``FileNotFoundError``, ``ValueError`` of
    :mod:`mmrmt.checkpoint`) is a :class:`PreflightError` with the same line."""
    try:
        yield
    except (FileNotFoundError, ValueError) as error:
        raise PreflightError(str(error)) from error


def check_writable(path: str, what: str, is_dir: bool) -> None:
    """Fail unless folder (``is_dir``) or file ``path``, ``what`` in the message (e.g. ``'--work-dir'``), can be
    created or written; creates nothing. The tools write a file atomically (a temporary file beside it, then moved
    onto it: :mod:`mmrmt.atomic_file`), so its folder must take a new file even where the file exists."""
    target = osp.abspath(path)
    if osp.exists(target) and osp.isdir(target) != is_dir:
        raise PreflightError(f'{what} {path} exists and is not a folder' if is_dir else
                             f'{what} {path} is a folder; name a file')
    folder = target if is_dir else osp.dirname(target)
    while not osp.exists(folder):
        folder = osp.dirname(folder)
    if not osp.isdir(folder):
        raise PreflightError(f'{what} {path} cannot be created: {folder} is a file, not a folder')
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PreflightError(f'{what} {path} cannot be written: no new file can be made in {folder}; make it '
                             f'writable or choose another {what}')


def check_installed(modules: Iterable[str], hint: str = DEPLOY_HINT) -> None:
    """Fail unless each of ``modules`` can be imported: ``<module> is not installed; <hint>``."""
    missing = next((module for module in modules if importlib.util.find_spec(module) is None), None)
    if missing is not None:
        raise PreflightError(f'{missing} is not installed; {hint}')


def check_device(device: Optional[str]) -> None:
    """Fail unless ``device`` is None, ``'cpu'``, or a CUDA device torch sees here (e.g. ``'cuda:1'``)."""
    parsed = None
    with suppress(RuntimeError):  # torch's refusal of a string naming no device
        parsed = torch.device(device or 'cpu')
    if parsed is None or parsed.type not in ('cpu', 'cuda'):
        raise PreflightError(f"--device {device!r} is not a device this tool runs on: give 'cpu', 'cuda' or 'cuda:N'")
    count = torch.cuda.device_count()  # 0 where CUDA is not available
    if parsed.type == 'cuda' and (parsed.index or 0) >= count:
        raise PreflightError(f'--device {device}: torch sees ' + (f'{count} CUDA device(s), cuda:0 to cuda:{count - 1}'
                             if count else 'no CUDA device here; use --device cpu'))


def check_input_size(height: int, width: int, purpose: str) -> None:
    """Fail unless ``--shape height width`` is at least one pixel a side and within :data:`MAX_SIDE` and
    :data:`MAX_PIXELS`; ``purpose`` is what the tool does with the model ('count', 'time')."""
    if min(height, width) < 1:
        raise PreflightError(f'--shape {height} {width}: each side must be >= 1 pixel')
    if max(height, width) > MAX_SIDE or height * width > MAX_PIXELS:
        raise PreflightError(f'--shape {height} {width} is too large to {purpose}: at most {MAX_SIDE} pixels a '
                             f'side and {MAX_PIXELS:,} pixels in all (the model\'s attention memory grows with '
                             'the square of the pixels)')
