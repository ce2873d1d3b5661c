"""A work dir belongs to one run at a time, through our tools/train.py and
through mmdet's own: a second training into a work dir in use ends with one
line naming the running one and writes nothing, the running one finishes
normally; a killed run's claim blocks nobody; the ranks of a distributed
run refused a work dir all end (none waits for another)."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

from mmrmt.engine.own_work_dir_runner import LOCK_FILE, work_dir_claim
from tool_process import (DET_CONFIG, REPO, SEG_CONFIG, check_ok, det_data_options, free_port, library_train_script,
                          run_script, tool_env)

TRAIN_SCRIPTS = {'ours': REPO / 'tools' / 'train.py', 'mmdet': library_train_script('mmdet')}


def train_args(work_dir: Path, demo_root: Path, max_iters: int = 4) -> List[str]:
    return [str(DET_CONFIG), '--work-dir', str(work_dir), '--cfg-options',
            'train_cfg.val_interval=100', f'train_cfg.max_iters={max_iters}',
            *det_data_options(demo_root)]


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
    args = train_args(work_dir, demo_root)
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


def test_the_claim_of_a_killed_run_blocks_nobody(demo_root, tmp_path):
    script, work_dir = TRAIN_SCRIPTS['ours'], tmp_path / 'work_dir'
    killed = start_until_locked(script, train_args(work_dir, demo_root), tmp_path / 'killed.log')
    killed.kill()
    killed.wait()
    assert (work_dir / LOCK_FILE).exists()

    result = run_script(script, train_args(work_dir, demo_root, max_iters=2))
    check_ok(result)
    assert (work_dir / 'iter_2.pth').is_file() and not (work_dir / LOCK_FILE).exists()


# builds the runner the way mmdet's and mmseg's train.py do, in a gloo process group
RANK_SCRIPT = '''
import sys
import torch.distributed as dist
from mmengine.config import Config
from mmengine.registry import RUNNERS
import mmrmt

dist.init_process_group('gloo')
cfg = Config.fromfile(sys.argv[1])
cfg.work_dir, cfg.launcher = sys.argv[2], 'pytorch'
RUNNERS.build(cfg)
print('rank', dist.get_rank(), 'passed the lock')
'''


def test_ranks_of_a_refused_distributed_run_all_end(tmp_path):
    work_dir = tmp_path / 'work_dir'
    work_dir.mkdir()
    holder = work_dir_claim(str(work_dir))  # a live run holds the work dir: this test's own process
    holder.take()
    script = tmp_path / 'build_runner.py'
    script.write_text(RANK_SCRIPT)
    result = subprocess.run(
        [sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node=2',
         f'--master_port={free_port()}', str(script), str(SEG_CONFIG), str(work_dir)],
        cwd=REPO, env=tool_env(), capture_output=True, text=True, timeout=300)
    holder.give_back()
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert output.count(f'error: work dir {work_dir} is in use by another run (pid '
                        f'{os.getpid()} ') == 1, output[-3000:]  # printed by rank 0 only
    assert 'passed the lock' not in output
    assert timestamp_folders(work_dir) == []
