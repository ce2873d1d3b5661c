"""One run at a time holds a file: a work dir's ``run.lock``, a test tool's ``--out``.

The claim is an exclusive lock of the file (:class:`filelock.FileLock`, ``flock``:
the system releases it when the holding process ends, however it ends, so a
killed run's file blocks nobody) and the holding run's record written into it,
which a refused run reads back to name that run in its one line. The file is
removed when the run gives the claim back. Only a regular file serves: a FIFO
(which a reader could block on), a folder or a link in its place is one line.
"""
import os
import os.path as osp
import shlex
import socket
import stat
import sys
import time
from contextlib import suppress
from typing import Optional

from filelock import FileLock, Timeout, lock_descriptor

#: How long a refused run waits for the record of a run that has just taken the file.
RECORD_WAIT_S = 1.0


class ClaimError(RuntimeError):
    """Another run holds the file, or it is no file a claim can use; the message is one line."""


def this_run() -> str:
    """This run as a claim names it: ``pid N on HOST, started TIME: COMMAND``."""
    return (f'pid {os.getpid()} on {socket.gethostname()}, started {time.strftime("%Y-%m-%d %H:%M:%S")}: '
            f'{shlex.join([sys.executable, *sys.argv])}')


def check_regular(path: str) -> None:
    """Fail unless ``path`` is a regular file or nothing.

    Raises:
        ClaimError: ``path is a folder, not a lock file mmrmt wrote; ...``.
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISREG(mode):
        return
    kinds = ((stat.S_ISDIR, 'a folder'), (stat.S_ISFIFO, 'a named pipe (FIFO)'), (stat.S_ISSOCK, 'a socket'))
    kind = next((kind for test, kind in kinds if test(mode)), 'a device file')
    if stat.S_ISLNK(mode):
        kind = f'a symbolic link to {os.readlink(path)}' + ('' if osp.exists(path) else ', which does not exist')
    raise ClaimError(f'{path} is {kind}, not a lock file mmrmt wrote; if no run uses {osp.dirname(path)}, delete it')


def holder(path: str) -> Optional[str]:
    """The run holding ``path``, as its record names it; None when no run holds it. Writes nothing.

    Raises:
        ClaimError: ``path`` is not a regular file.
    """
    check_regular(path)
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except (FileNotFoundError, NotADirectoryError):  # no file, or no folder that could hold one
        return None
    try:
        if lock_descriptor(descriptor, blocking=False):
            return None  # unlocked when closed
        deadline = time.monotonic() + RECORD_WAIT_S
        while not (record := os.pread(descriptor, 64 * 1024, 0)) and time.monotonic() < deadline:
            time.sleep(0.05)  # the run has just taken it and is writing its record
        return record.decode(errors='replace').strip() or 'a run that wrote no record'
    finally:
        os.close(descriptor)


class RunClaim:
    """This run's claim of the file ``path``: :meth:`take` it, :meth:`give_back` it (or ``with``).

    Args:
        path (str): The claim file (filelock creates its folder, as the run would).
        busy (str): The start of the line refusing a second run, e.g. ``'work dir w is in use'``;
            ``' by another run (<its record>); wait for it to end, or choose another <option>'`` follows.
        option (str): The option choosing another file, e.g. ``'--work-dir'``.
    """

    def __init__(self, path: str, busy: str, option: str) -> None:
        self.path, self.busy, self.option = path, busy, option
        self._lock = FileLock(path, timeout=0, thread_local=False, on_acquired=self._write_record)

    def check_free(self) -> None:
        """Fail if another run holds the file; takes and writes nothing.

        Raises:
            ClaimError: Naming the run that holds it, or the file is not a regular file.
        """
        running = None if self._lock.is_locked else holder(self.path)
        if running is not None:
            raise ClaimError(f'{self.busy} by another run ({running}); wait for it to end, or choose another '
                             f'{self.option}')

    def take(self) -> None:
        """Hold the claim (one held already stays held).

        Raises:
            ClaimError: As :meth:`check_free`, or the file cannot be created where filelock says only "timeout".
            OSError: The file cannot be created (e.g. a read-only folder).
        """
        for _ in range(3):  # the holder may give it back meanwhile
            check_regular(self.path)
            try:
                self._lock.acquire()
                return
            except Timeout:  # also filelock's answer where no file can be made (e.g. under /proc, even as root)
                if not osp.lexists(self.path):
                    self._create_or_refuse()
                self.check_free()
        raise ClaimError(f'{self.path}: other runs keep taking it; start one run at a time')

    def _create_or_refuse(self) -> None:
        """Create the (unlocked) claim file, or fail with a :class:`ClaimError` saying why it cannot be."""
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644))
        except OSError as error:
            raise ClaimError(f'cannot create {self.path} ({error.strerror or error}); choose another '
                             f'{self.option}') from error

    def give_back(self) -> None:
        """Remove the file, then release it: a run waiting on it finds it gone and creates it anew."""
        if self._lock.is_locked:
            with suppress(FileNotFoundError):
                os.unlink(self.path)
            self._lock.release(force=True)

    def __enter__(self) -> 'RunClaim':
        self.take()
        return self

    def __exit__(self, *_) -> None:
        self.give_back()

    @staticmethod
    def _write_record(descriptor: int) -> None:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, this_run().encode(), 0)
