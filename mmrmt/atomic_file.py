"""Write a file so that it is either wholly replaced or left as it was."""
import os
import os.path as osp
import re
import uuid
from contextlib import contextmanager
from typing import Iterator, List

#: The name of :func:`replaced_atomically`'s temporary file of ``NAME``: ``.NAME.<12 hex digits>.tmp``.
TEMPORARY_NAME = re.compile(r'\..+\.[0-9a-f]{12}\.tmp')


def temporary_path(destination: str) -> str:
    """A fresh temporary path beside ``destination`` (see :data:`TEMPORARY_NAME`)."""
    folder, name = osp.split(osp.abspath(destination))
    return osp.join(folder, f'.{name}.{uuid.uuid4().hex[:12]}.tmp')


def remove_leftover_temporaries(folder: str) -> List[str]:
    """Remove the temporary files of :func:`replaced_atomically` in ``folder`` (left by a process that
    was killed while writing; call it only where no other process writes) and return their paths."""
    if not osp.isdir(folder):
        return []
    leftovers = sorted(osp.join(folder, name) for name in os.listdir(folder) if TEMPORARY_NAME.fullmatch(name))
    for path in leftovers:
        os.unlink(path)
    return leftovers


class UnwritableError(OSError):
    """A file :func:`replaced_atomically` cannot even begin (its folder refuses a new file, e.g. /proc even to
    root, which passes every permission check): one line naming it and the fix."""


@contextmanager
def replaced_atomically(destination: str, overwrite: bool = True) -> Iterator[str]:
    """A fresh temporary path beside ``destination`` (created with the umask's permissions), moved onto it by
    :func:`os.replace` (atomic within a filesystem) when the block ends without an exception, else removed:
    nobody sees a half-written ``destination``, and a failure leaves it untouched.

    Args:
        destination (str): The file to write.
        overwrite (bool): Whether an existing ``destination`` is replaced. When False the file is linked into
            place (atomic too), and a ``destination`` that appeared meanwhile raises :class:`FileExistsError`.

    Raises:
        UnwritableError: No file can be made beside ``destination`` (nothing was written).
    """
    temporary = temporary_path(destination)
    try:
        open(temporary, 'xb').close()
    except OSError as error:
        raise UnwritableError(f'{destination} cannot be written: no new file can be made in '
                              f'{osp.dirname(temporary)} ({error.strerror or error}); choose another place') from error
    try:
        yield temporary
        if overwrite:
            os.replace(temporary, destination)
        else:
            os.link(temporary, destination)
            os.unlink(temporary)
    except BaseException:
        if osp.exists(temporary):
            os.unlink(temporary)
        raise
