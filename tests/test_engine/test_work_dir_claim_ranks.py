"""The ranks of a distributed run refused a work dir in use all end, none waiting for another: the
OwnWorkDirRunner built as mmdet's and mmseg's train.py build it, in a gloo process group of two (moved from
tests/tools/test_busy_work_dir.py, whose runs go through the tools)."""
import os
import subprocess
import sys

import pytest

from mmrmt.engine.own_work_dir_runner import work_dir_claim
from helpers.tiny_configs import SEG_CONFIG
from helpers.tool_modules import REPO

pytestmark = pytest.mark.slow  # two processes of torchrun


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
        [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node=2', str(script),
         str(SEG_CONFIG), str(work_dir)],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS='1'))
    holder.give_back()
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert output.count(f'error: work dir {work_dir} is in use by another run (pid '
                        f'{os.getpid()} ') == 1, output[-3000:]  # printed by rank 0 only
    assert 'passed the lock' not in output
    assert not [path for path in work_dir.iterdir() if path.is_dir()]  # no rank wrote a log folder
