"""tools/slurm_train.sh and tools/slurm_test.sh hand srun the job's resources
and run our tools with --launcher=slurm (srun is replaced by a recorder that
runs the command once, as a single task)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tool_process import DET_CONFIG, REPO, tool_env

FAKE_SRUN = '''#!{python}
"""Record srun's options and command in $SRUN_RECORD, then run the command."""
import argparse, json, os, subprocess, sys
parser = argparse.ArgumentParser()
for option in ('-p', '--job-name', '--gres', '--ntasks', '--ntasks-per-node', '--cpus-per-task',
               '--kill-on-bad-exit', '--time'):
    parser.add_argument(option)
parser.add_argument('command', nargs=argparse.REMAINDER)
args = parser.parse_args()
with open(os.environ['SRUN_RECORD'], 'w') as file:
    json.dump(vars(args), file)
sys.exit(subprocess.run(args.command).returncode)
'''


@pytest.fixture
def srun_env(tmp_path) -> dict:
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    srun = bin_dir / 'srun'
    srun.write_text(FAKE_SRUN.format(python=sys.executable))
    srun.chmod(0o755)
    return dict(tool_env(), PATH=f'{bin_dir}{os.pathsep}{os.environ["PATH"]}',
                SRUN_RECORD=str(tmp_path / 'srun.json'), GPUS='4', GPUS_PER_NODE='2',
                SRUN_ARGS='--time=10', CUDA_VISIBLE_DEVICES='')  # the tools see no GPU


def run_script(name: str, args, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(['bash', str(REPO / 'tools' / name), *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def recorded(env: dict) -> dict:
    return json.loads(Path(env['SRUN_RECORD']).read_text())


@pytest.mark.parametrize('script, tool, extra', [
    ('slurm_train.sh', 'train.py', ['WORK', '--amp']),
    ('slurm_test.sh', 'test.py', ['model.pth', '--tta']),
])
def test_slurm_script_runs_the_tool_through_srun(script, tool, extra, srun_env):
    result = run_script(script, ['gpu_partition', 'rmt_job', DET_CONFIG, *extra], srun_env)
    srun = recorded(srun_env)
    assert {key: srun[key] for key in ('p', 'job_name', 'gres', 'ntasks', 'ntasks_per_node',
                                       'cpus_per_task', 'kill_on_bad_exit', 'time')} == dict(
        p='gpu_partition', job_name='rmt_job', gres='gpu:2', ntasks='4', ntasks_per_node='2',
        cpus_per_task='5', kill_on_bad_exit='1', time='10')
    python, unbuffered, tool_path, *tool_args = srun['command']
    assert (python, unbuffered) == (sys.executable, '-u')
    assert Path(tool_path).resolve() == REPO / 'tools' / tool
    expected = ([str(DET_CONFIG), '--work-dir=WORK', '--amp'] if tool == 'train.py' else
                [str(DET_CONFIG), 'model.pth', '--tta'])
    assert tool_args == expected + ['--launcher=slurm']
    # the tool itself ran: without CUDA it refuses the Slurm launcher in one line
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        'error: without CUDA only --launcher pytorch is supported, got --launcher slurm')


def test_slurm_script_needs_its_arguments(srun_env):
    result = run_script('slurm_test.sh', ['gpu_partition', 'rmt_job', DET_CONFIG], srun_env)
    assert result.returncode == 2
    assert result.stderr.startswith('usage: ')
    assert not Path(srun_env['SRUN_RECORD']).exists()
