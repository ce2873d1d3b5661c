"""The work dir lock: one holder at a time, also among processes racing for it;
a live holder named in one line; an ended holder's lock taken over."""
import json
import multiprocessing
import os
import shlex
import signal
import socket
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from mmrmt.engine import work_dir_lock
from mmrmt.engine.work_dir_lock import LOCK_FILE, RunRecord, WorkDirBusyError, WorkDirLock, check_work_dir_free


def write_lock(work_dir: Path, record: RunRecord) -> None:
    (work_dir / LOCK_FILE).write_text(json.dumps(asdict(record)))


def ended_run() -> RunRecord:
    """The record of a process that has exited."""
    process = subprocess.Popen([sys.executable, '-c', 'pass'])
    process.wait()
    return replace(RunRecord.of_this_process(), pid=process.pid, command='python train.py old')


@pytest.fixture
def live_run():
    """The record of a running process (not this one)."""
    process = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    yield replace(RunRecord.of_this_process(), pid=process.pid,
                  pid_start=work_dir_lock.process_start(process.pid),
                  command='python tools/train.py cfg.py')
    process.kill()
    process.wait()


def test_acquire_writes_this_run_and_release_removes_it(tmp_path):
    lock = WorkDirLock(str(tmp_path))
    lock.acquire()
    record = json.loads((tmp_path / LOCK_FILE).read_text())
    assert record['pid'] == RunRecord.of_this_process().pid
    assert record['host'] == socket.gethostname() and record['command'] == shlex.join([sys.executable, *sys.argv])
    lock.release()
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_live_run_keeps_the_work_dir(tmp_path, live_run):
    write_lock(tmp_path, live_run)
    expected = (f'work dir {tmp_path} is in use by another run (pid {live_run.pid} on '
                f'{live_run.host}, started {live_run.started}: python tools/train.py cfg.py); '
                'wait for it to end, or choose another --work-dir')
    with pytest.raises(WorkDirBusyError) as error:
        WorkDirLock(str(tmp_path)).acquire()
    assert str(error.value) == expected
    with pytest.raises(WorkDirBusyError, match='is in use by another run'):
        check_work_dir_free(str(tmp_path))
    assert json.loads((tmp_path / LOCK_FILE).read_text()) == asdict(live_run)


def test_a_run_on_another_host_is_assumed_alive(tmp_path):
    write_lock(tmp_path, replace(ended_run(), host='elsewhere'))
    with pytest.raises(WorkDirBusyError,
                       match=f'on elsewhere.*if that run no longer exists, delete {tmp_path}'):
        WorkDirLock(str(tmp_path)).acquire()


def test_the_lock_of_an_ended_run_is_taken_over(tmp_path):
    ended = ended_run()
    write_lock(tmp_path, ended)
    check_work_dir_free(str(tmp_path))  # no error: that run is gone
    lock = WorkDirLock(str(tmp_path))
    lock.acquire()
    assert lock.taken_over == ended
    assert json.loads((tmp_path / LOCK_FILE).read_text()) == asdict(lock.record)


def test_a_reused_process_id_does_not_keep_the_lock(tmp_path, live_run):
    write_lock(tmp_path, replace(live_run, pid_start='1'))  # that pid now runs a later process
    lock = WorkDirLock(str(tmp_path))
    lock.acquire()
    assert lock.taken_over is not None and lock.taken_over.pid == live_run.pid


def test_a_file_naming_no_run_is_one_error(tmp_path, monkeypatch):
    monkeypatch.setattr(work_dir_lock, 'RECORD_WAIT_S', 0.1)
    (tmp_path / LOCK_FILE).write_text('not a lock')
    with pytest.raises(WorkDirBusyError, match=f'{tmp_path / LOCK_FILE} names no run'):
        WorkDirLock(str(tmp_path)).acquire()


def test_release_leaves_a_lock_another_run_took(tmp_path, live_run):
    lock = WorkDirLock(str(tmp_path))
    lock.acquire()
    write_lock(tmp_path, live_run)
    lock.release()
    assert json.loads((tmp_path / LOCK_FILE).read_text()) == asdict(live_run)


def race_for_lock(work_dir, start, done, results) -> None:
    lock = WorkDirLock(work_dir)
    start.wait()
    try:
        lock.acquire()
        results.put('acquired')
    except WorkDirBusyError as error:
        results.put(str(error))
    done.wait()  # holders keep the lock until every process has tried


@pytest.mark.parametrize('stale', [False, True], ids=['free', 'stale'])
def test_of_processes_racing_for_the_lock_exactly_one_gets_it(tmp_path, stale):
    if stale:
        write_lock(tmp_path, ended_run())
    context = multiprocessing.get_context('fork')
    count = 6
    start, done, results = context.Barrier(count), context.Barrier(count), context.Queue()
    processes = [context.Process(target=race_for_lock, args=(str(tmp_path), start, done, results))
                 for _ in range(count)]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert outcomes.count('acquired') == 1, outcomes
    assert all('is in use by another run' in outcome for outcome in outcomes if outcome != 'acquired')


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize('make,what', [
    (lambda path: path.mkdir(), 'a folder'),
    (fifo, 'a named pipe (FIFO)'),
    (lambda path: path.symlink_to(path.parent / 'gone.json'),
     'a symbolic link to {folder}/gone.json, which does not exist'),
    (lambda path: path.symlink_to('/etc/hostname'), 'a symbolic link to /etc/hostname'),
    (lambda path: path.write_text('{"pid": "12", "host": "h", "started": "s", "command": "c"}'),
     'JSON whose pid 12 is not a process id'),
    (lambda path: path.write_text(json.dumps(dict(pid=2 ** 70, host='h', started='s', command='c'))),
     f'JSON whose pid {2 ** 70} is not a process id'),
    (lambda path: path.write_text('{"pid": true, "host": "h", "started": "s", "command": "c"}'),
     'JSON whose pid True is not a process id'),
    (lambda path: path.write_text('{"pid": 12, "host": 1, "started": "s", "command": "c"}'),
     'JSON whose host, started, command or pid_start are not text'),
    (lambda path: path.write_text('[12]'), 'JSON without the fields of a run'),
    (lambda path: path.write_text('{"pid": 12, "host": "h", "started": "s", "command": "c", "x": 1}'),
     'JSON without the fields of a run'),
])
def test_a_lock_that_is_no_lock_file_is_one_error_at_once(make, what, tmp_path, monkeypatch):
    """A folder, a FIFO (which would block an open for reading), a link or a record of wrong
    fields: one line naming what it is, and neither a hang nor a wait nor a traceback."""
    make(tmp_path / LOCK_FILE)
    expected = (f'{tmp_path / LOCK_FILE} is {what.format(folder=tmp_path)}, not a lock file mmrmt wrote; '
                f'if no run uses {tmp_path}, delete it')

    def blocked(*_):
        raise TimeoutError('the lock reader blocked')

    def waited(*_):
        raise AssertionError('the lock reader waited for a record')
    # no wait: the reader's retry loop never sleeps (seen without timing the loaded machine)
    monkeypatch.setattr(work_dir_lock.time, 'sleep', waited)
    previous = signal.signal(signal.SIGALRM, blocked)  # a reader blocked on the FIFO fails, not hangs
    signal.alarm(10)
    try:
        for check in (lambda: WorkDirLock(str(tmp_path)).acquire(), lambda: check_work_dir_free(str(tmp_path))):
            with pytest.raises(WorkDirBusyError) as error:
                check()
            assert str(error.value) == expected
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert os.path.lexists(tmp_path / LOCK_FILE)
