"""One run at a time in a work dir: a lock file naming the run that holds it.

The lock is ``<work_dir>/run.lock``, created with ``O_CREAT | O_EXCL`` (so of
two runs racing for it exactly one succeeds) and holding the run's process
id, host, start time and command line as JSON. A second run reads it and
refuses with one line naming the first. A lock whose process is gone (killed,
crashed) is taken over when the holder ran on this host: its process id no
longer exists, or now belongs to a process started later (a reused id).
"""
import atexit
import json
import os
import os.path as osp
import shlex
import socket
import stat
import sys
import time
from dataclasses import asdict, dataclass
from typing import Optional

try:
    import fcntl
except ImportError:  # Windows: no flock, so a takeover is not guarded against a second one
    fcntl = None

LOCK_FILE = 'run.lock'
# how long a reader waits for a just-created lock file to receive its record
RECORD_WAIT_S = 2.0
# the largest process id of any Linux (PID_MAX_LIMIT, 2 ** 22) or other system (int32)
MAX_PID = 2 ** 31 - 1
# a lock file is a short JSON record: a longer file is not one
MAX_RECORD_BYTES = 64 * 1024


class WorkDirBusyError(RuntimeError):
    """A live run holds the work dir (or its lock cannot be read); the message is one line."""


def process_start(pid: int) -> Optional[str]:
    """When process ``pid`` started (clock ticks since boot, from /proc), None if unknown."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            # the fields after the command name, which is in parentheses: starttime is the 20th
            return stat.read().rsplit(')', 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass(frozen=True)
class RunRecord:
    """The run holding a work dir, as written into its lock file.

    Args:
        pid (int): Process id of the run's (rank 0) process.
        host (str): Host name of the machine it runs on.
        started (str): Local time the lock was taken, ``YYYY-mm-dd HH:MM:SS``.
        command (str): The run's command line.
        pid_start (str, optional): The process's start time from /proc,
            which tells a reused process id apart.
    """

    pid: int
    host: str
    started: str
    command: str
    pid_start: Optional[str] = None

    @classmethod
    def of_this_process(cls) -> 'RunRecord':
        return cls(pid=os.getpid(), host=socket.gethostname(),
                   started=time.strftime('%Y-%m-%d %H:%M:%S'),
                   command=shlex.join([sys.executable, *sys.argv]),
                   pid_start=process_start(os.getpid()))

    def is_this_process(self) -> bool:
        return self.pid == os.getpid() and self.host == socket.gethostname()

    def is_alive(self) -> bool:
        """False only when the run certainly ended: on this host, its process is gone.

        A run on another host counts as alive (its processes cannot be seen).
        """
        if self.host != socket.gethostname():
            return True
        if self.pid <= 0:  # no process's id (and os.kill would address a group)
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive, owned by another user
            pass
        return self.pid_start is None or process_start(self.pid) in (None, self.pid_start)

    def describe(self) -> str:
        return f'pid {self.pid} on {self.host}, started {self.started}: {self.command}'


def not_a_lock(path: str, what: str) -> WorkDirBusyError:
    """The one line for a ``path`` that is not a lock file mmrmt wrote (``what`` it is instead)."""
    return WorkDirBusyError(f'{path} is {what}, not a lock file mmrmt wrote; if no run uses '
                            f'{osp.dirname(path)}, delete it')


def file_kind(mode: int) -> str:
    """What a non-regular file of ``stat`` mode ``mode`` is, for messages."""
    kinds = ((stat.S_ISDIR, 'a folder'), (stat.S_ISLNK, 'a symbolic link'), (stat.S_ISFIFO, 'a named pipe (FIFO)'),
             (stat.S_ISSOCK, 'a socket'))
    return next((kind for test, kind in kinds if test(mode)), 'a device file')


def record_from(path: str, fields: object) -> RunRecord:
    """The record the JSON ``fields`` of lock file ``path`` hold, every field checked."""
    problem = None
    if not isinstance(fields, dict) or not {'pid', 'host', 'started', 'command'} <= set(fields) <= set(
            RunRecord.__dataclass_fields__):
        problem = 'JSON without the fields of a run'
    elif type(fields['pid']) is not int or not 0 < fields['pid'] <= MAX_PID:
        problem = f'JSON whose pid {str(fields["pid"])[:30]} is not a process id'
    elif not all(isinstance(fields[name], str) for name in ('host', 'started', 'command')) or not isinstance(
            fields.get('pid_start'), (str, type(None))):
        problem = 'JSON whose host, started, command or pid_start are not text'
    if problem is not None:
        raise not_a_lock(path, problem)
    return RunRecord(**fields)


def read_lock_text(path: str) -> Optional[str]:
    """The text of lock file ``path``; None when there is none. Never opens anything
    but a regular file: a FIFO would block the reader, a link point anywhere.

    Raises:
        WorkDirBusyError: ``path`` is not a regular file (a folder, a FIFO, a
            link, dangling or not), or is too long to be a lock.
    """
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # no lock file, or no work dir that could hold one
        return None
    if not stat.S_ISREG(mode):
        kind = file_kind(mode)
        if stat.S_ISLNK(mode):
            target = os.readlink(path)
            kind += f' to {target}' + ('' if osp.exists(path) else ', which does not exist')
        raise not_a_lock(path, kind)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, 'O_NOFOLLOW', 0))
    except FileNotFoundError:  # released meanwhile
        return None
    except OSError as error:  # e.g. replaced by a link meanwhile (ELOOP), or unreadable
        raise not_a_lock(path, f'not readable ({error.strerror})') from None
    with os.fdopen(descriptor, 'rb') as lock_file:
        if not stat.S_ISREG(os.fstat(lock_file.fileno()).st_mode):  # replaced meanwhile
            raise not_a_lock(path, file_kind(os.fstat(lock_file.fileno()).st_mode))
        data = lock_file.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise not_a_lock(path, f'a file of over {MAX_RECORD_BYTES // 1024} KiB')
    return data.decode('utf-8', errors='replace')


def read_record(path: str) -> Optional[RunRecord]:
    """The record in lock file ``path``; None when there is no lock file.

    A file just created by another run may not hold its record yet: reading
    retries for :data:`RECORD_WAIT_S` seconds while it holds no complete JSON.

    Raises:
        WorkDirBusyError: ``path`` is not a regular file, or it stays without
            a readable record.
    """
    deadline = time.monotonic() + RECORD_WAIT_S
    while True:
        text = read_lock_text(path)
        if text is None:
            return None
        try:
            fields = json.loads(text)
        except ValueError:
            if time.monotonic() > deadline:
                raise WorkDirBusyError(
                    f'{path} names no run (it is not a lock file mmrmt wrote); if no run uses '
                    f'{osp.dirname(path)}, delete it') from None
            time.sleep(0.05)
            continue
        return record_from(path, fields)


def busy_message(work_dir: str, holder: RunRecord) -> str:
    """The one line a run refused because ``holder`` uses ``work_dir`` prints."""
    message = (f'work dir {work_dir} is in use by another run ({holder.describe()}); wait for it '
               'to end, or choose another --work-dir')
    if holder.host != socket.gethostname():
        message += f' (if that run no longer exists, delete {osp.join(work_dir, LOCK_FILE)})'
    return message


def check_work_dir_free(work_dir: str) -> None:
    """Fail if a live run (other than this process) holds ``work_dir``; writes nothing.

    Raises:
        WorkDirBusyError: With :func:`busy_message`.
    """
    holder = read_record(osp.join(work_dir, LOCK_FILE))
    if holder is not None and not holder.is_this_process() and holder.is_alive():
        raise WorkDirBusyError(busy_message(work_dir, holder))


class WorkDirLock:
    """The lock of one work dir, taken by :meth:`acquire` and given back by :meth:`release`.

    Args:
        work_dir (str): An existing folder.

    Attributes:
        taken_over (RunRecord, optional): After :meth:`acquire`, the ended
            run whose lock it replaced.
    """

    def __init__(self, work_dir: str) -> None:
        self.work_dir = work_dir
        self.path = osp.join(work_dir, LOCK_FILE)
        self.record = RunRecord.of_this_process()
        self.taken_over: Optional[RunRecord] = None
        self._held = False

    def acquire(self) -> None:
        """Take the lock; a lock this process holds already is left as it is.

        Raises:
            WorkDirBusyError: A live run holds it.
        """
        for _ in range(3):  # a holder may release, or another run take over, meanwhile
            if self._create():
                self._held = True
                atexit.register(self.release)
                return
            holder = read_record(self.path)
            if holder is None:
                continue
            if holder.is_this_process():
                return
            if holder.is_alive():
                raise WorkDirBusyError(busy_message(self.work_dir, holder))
            if self._remove_stale(holder):
                self.taken_over = holder
        raise WorkDirBusyError(f'work dir {self.work_dir}: other runs keep taking {self.path}; '
                               'start one run at a time')

    def release(self) -> None:
        """Delete the lock file if this object created it and it is still this run's."""
        if not self._held:
            return
        self._held = False
        atexit.unregister(self.release)
        try:
            if read_record(self.path) == self.record:
                os.unlink(self.path)
        except (OSError, WorkDirBusyError):
            pass  # the file is gone or no longer ours: nothing of ours to remove

    def _create(self) -> bool:
        """Create the lock file with this run's record, if there is none."""
        try:
            descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        try:
            with os.fdopen(descriptor, 'w') as lock_file:
                lock_file.write(json.dumps(asdict(self.record)))
        except OSError:  # e.g. a full disk: leave no lock naming no run
            os.unlink(self.path)
            raise
        return True

    def _remove_stale(self, holder: RunRecord) -> bool:
        """Delete the lock of ended run ``holder``, unless another run replaced it first.

        Two runs taking over the same lock at once take turns through a
        ``flock`` of the work dir (released by the system if a process dies),
        and each deletes the file only if it still names ``holder``.
        """
        folder = os.open(self.work_dir, os.O_RDONLY)
        try:
            if fcntl is not None:
                try:
                    fcntl.flock(folder, fcntl.LOCK_EX)
                except OSError:  # a file system without flock: unguarded
                    pass
            if read_record(self.path) != holder:
                return False
            os.unlink(self.path)
            return True
        finally:
            os.close(folder)  # also releases the flock
