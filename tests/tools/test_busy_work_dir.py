"""A work dir belongs to one run at a time, through our tools/train.py and
through mmdet's own: a second training into a work dir in use ends with one
line naming the running one and writes nothing, the running one finishes
normally (a killed run's claim blocks nobody: tests/test_run_claim.py; the ranks of a distributed run
refused a work dir: tests/test_engine/test_work_dir_claim_ranks.py)."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

from mmrmt.engine.own_work_dir_runner import LOCK_FILE
from tool_process import DET_CONFIG, REPO, det_data_options, library_train_script, run_script, tool_env

TRAIN_SCRIPTS = {'ours': REPO / 'tools' / 'train.py', 'mmdet': library_train_script('mmdet')}


def start_until_locked(script: Path, args: List[str], log: Path) -> subprocess.Popen:
    """Start a training and return once it holds its work dir's lock."""
    lock = Path(args[args.index('--work-dir') + 1]) / LOCK_FILE
    with open(log, 'w') as output:
        process = subprocess.Popen([sys.executable, str(script), *args], cwd=REPO, env=tool_env(),
                                   stdout=output, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while not lock.exists():
        assert process.poll() is None, f'the first run ended early:\n{log.read_text()[-3000:]}'
        assert time.monotonic() < deadline, 'the first run never took the lock'
        time.sleep(0.2)
    return process


def timestamp_folders(work_dir: Path) -> List[str]:
    """The log folders mmengine's runs created in ``work_dir`` (one per run)."""
    return sorted(path.name for path in work_dir.iterdir() if path.is_dir())


@pytest.mark.parametrize('launcher', ['ours', 'mmdet'])
def test_second_training_into_a_busy_work_dir_refuses(launcher, demo_root, tmp_path):
    script, work_dir = TRAIN_SCRIPTS[launcher], tmp_path / 'work_dir'
    args = [str(DET_CONFIG), '--work-dir', str(work_dir), '--cfg-options', 'train_cfg.val_interval=100',
            'train_cfg.max_iters=4', *det_data_options(demo_root)]
    first = start_until_locked(script, args, tmp_path / 'first.log')
    os.kill(first.pid, signal.SIGSTOP)  # the first run holds the lock until the second is done
    try:
        second = run_script(script, args)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    first.wait(timeout=600)

    assert first.returncode == 0, (tmp_path / 'first.log').read_text()[-3000:]
    assert (work_dir / 'iter_4.pth').is_file() and not (work_dir / LOCK_FILE).exists()
    assert second.returncode == 1
    assert 'Traceback' not in second.stderr, second.stderr[-3000:]
    refusal = second.stderr.strip().splitlines()[-1]
    assert refusal.startswith(f'error: work dir {work_dir} is in use by another run (pid '
                              f'{first.pid} on {socket.gethostname()}, started ')
    assert refusal.endswith(f'{script} {" ".join(args)}); wait for it to end, or choose '
                            'another --work-dir')
    assert len(timestamp_folders(work_dir)) == 1  # the second run wrote no log folder
