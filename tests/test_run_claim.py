"""The claim of a file by one run at a time (a work dir's run.lock, a test tool's --out): one holder
also among processes racing for it; a live holder named in one line, its file left as it was; a
killed holder's claim ended with its process; a file that is no regular file one line at once."""
import multiprocessing
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from mmrmt import run_claim
from mmrmt.engine.own_work_dir_runner import LOCK_FILE, work_dir_claim
from mmrmt.run_claim import ClaimError, RunClaim

REPO = Path(__file__).resolve().parents[1]
#: Takes the claim of the work dir argv[1], says so, and holds it until killed.
HOLDER = ('import sys, time; from mmrmt.engine.own_work_dir_runner import work_dir_claim; '
          'claim = work_dir_claim(sys.argv[1]); claim.take(); print("held", flush=True); time.sleep(600)')


@pytest.fixture
def live_run(tmp_path):
    """A process (not this one) holding ``tmp_path``'s claim."""
    process = subprocess.Popen([sys.executable, '-c', HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                               cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert process.stdout.readline() == 'held\n'
    yield process
    process.kill()
    process.wait()


def test_take_writes_this_run_and_give_back_removes_it(tmp_path):
    claim = work_dir_claim(str(tmp_path))
    claim.take()
    record = (tmp_path / LOCK_FILE).read_text()
    assert record.startswith(f'pid {os.getpid()} on {socket.gethostname()}, started ')
    assert record.endswith(f': {shlex.join([sys.executable, *sys.argv])}')
    claim.take()  # held already: stays held
    claim.give_back()
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_live_run_keeps_the_work_dir(tmp_path, live_run):
    record = (tmp_path / LOCK_FILE).read_text()
    assert record.startswith(f'pid {live_run.pid} on {socket.gethostname()}, started ')
    expected = (f'work dir {tmp_path} is in use by another run ({record}); '
                'wait for it to end, or choose another --work-dir')
    for check in (work_dir_claim(str(tmp_path)).take, work_dir_claim(str(tmp_path)).check_free):
        with pytest.raises(ClaimError) as error:
            check()
        assert str(error.value) == expected
    assert (tmp_path / LOCK_FILE).read_text() == record  # the refused run wrote nothing


def test_the_claim_of_a_killed_run_ends_with_it(tmp_path, live_run):
    live_run.send_signal(signal.SIGKILL)
    live_run.wait()
    assert (tmp_path / LOCK_FILE).exists()  # left behind, held by nobody
    work_dir_claim(str(tmp_path)).check_free()
    claim = work_dir_claim(str(tmp_path))
    claim.take()
    assert (tmp_path / LOCK_FILE).read_text().startswith(f'pid {os.getpid()} ')
    claim.give_back()


@pytest.mark.parametrize('content', ['', 'not a record', '{"pid": 12}'])
def test_a_file_no_run_holds_is_taken_whatever_it_holds(tmp_path, content):
    (tmp_path / LOCK_FILE).write_text(content)
    with work_dir_claim(str(tmp_path)):
        assert (tmp_path / LOCK_FILE).read_text().startswith(f'pid {os.getpid()} ')


def test_a_holder_without_a_record_yet_is_named_so(tmp_path, monkeypatch):
    monkeypatch.setattr(run_claim, 'RECORD_WAIT_S', 0)
    path = tmp_path / 'out.claim'
    path.touch()
    with open(path) as held:
        assert run_claim.lock_descriptor(held.fileno(), blocking=False)
        with pytest.raises(ClaimError, match=r'^--out o is being written by another run \(a run that wrote no rec'):
            RunClaim(str(path), '--out o is being written', '--out').take()


def race_for_claim(work_dir, start, done, results) -> None:
    claim = work_dir_claim(work_dir)
    start.wait()
    try:
        claim.take()
        results.put('taken')
    except ClaimError as error:
        results.put(str(error))
    done.wait()  # holders keep the claim until every process has tried


@pytest.mark.parametrize('left_behind', [False, True], ids=['free', 'left_by_a_killed_run'])
def test_of_processes_racing_for_the_claim_exactly_one_gets_it(tmp_path, left_behind):
    if left_behind:
        (tmp_path / LOCK_FILE).write_text('pid 1 on h, started s: python train.py old')
    context = multiprocessing.get_context('fork')
    count = 6
    start, done, results = context.Barrier(count), context.Barrier(count), context.Queue()
    processes = [context.Process(target=race_for_claim, args=(str(tmp_path), start, done, results))
                 for _ in range(count)]
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert outcomes.count('taken') == 1, outcomes
    assert all('is in use by another run (pid ' in outcome for outcome in outcomes if outcome != 'taken')


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize('make,what', [
    (lambda path: path.mkdir(), 'a folder'),
    (fifo, 'a named pipe (FIFO)'),
    (lambda path: path.symlink_to(path.parent / 'gone.json'),
     'a symbolic link to {folder}/gone.json, which does not exist'),
    (lambda path: path.symlink_to('/etc/hostname'), 'a symbolic link to /etc/hostname'),
])
def test_a_claim_file_that_is_no_regular_file_is_one_error_at_once(make, what, tmp_path, monkeypatch):
    """A folder, a FIFO (which would block a reader, and takes a lock) or a link (which would point the
    record anywhere): one line naming what it is, and neither a hang nor a wait nor a traceback."""
    make(tmp_path / LOCK_FILE)
    expected = (f'{tmp_path / LOCK_FILE} is {what.format(folder=tmp_path)}, not a lock file mmrmt wrote; '
                f'if no run uses {tmp_path}, delete it')

    def blocked(*_):
        raise TimeoutError('the claim blocked')

    def waited(*_):
        raise AssertionError('the claim waited for a record')
    monkeypatch.setattr(run_claim.time, 'sleep', waited)
    previous = signal.signal(signal.SIGALRM, blocked)  # a claim blocked on the FIFO fails, not hangs
    signal.alarm(10)
    try:
        for check in (work_dir_claim(str(tmp_path)).take, work_dir_claim(str(tmp_path)).check_free):
            with pytest.raises(ClaimError) as error:
                check()
            assert str(error.value) == expected
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert os.path.lexists(tmp_path / LOCK_FILE)
    assert Path('/etc/hostname').read_text().strip()  # a link's target is left as it was


def test_a_work_dir_that_does_not_exist_or_is_a_file_is_free(tmp_path):
    """The tools check the work dir before they check it can be made: a path that is no folder yet holds no run."""
    (tmp_path / 'a_file').touch()
    for work_dir in (tmp_path / 'none', tmp_path / 'a_file'):
        work_dir_claim(str(work_dir)).check_free()


def test_a_claim_no_file_can_be_made_for_says_so(tmp_path, monkeypatch):
    """Where the folder takes no new file yet filelock answers only "timeout" (root under /proc: ENOENT), the line
    says the file cannot be created and what to do, not that other runs keep taking it."""
    path = str(tmp_path / '.out.pkl.claim')
    real_open = os.open

    def no_new_file(name, flags, *args, **kwargs):
        if str(name) == path and flags & os.O_CREAT:
            raise FileNotFoundError(2, 'No such file or directory', name)
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, 'open', no_new_file)
    with pytest.raises(ClaimError) as error:
        RunClaim(path, '--out o is being written', '--out').take()
    assert str(error.value) == f'cannot create {path} (No such file or directory); choose another --out'
