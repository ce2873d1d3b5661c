"""A run interrupted after 2 iterations and resumed ends with exactly the weights of an uninterrupted
4-iteration run (same seed, deterministic mode), through our tools/train.py and through mmdet's and mmseg's
own given our configs (the ResumeRNGHook they name); ``--resume`` in a copied work dir reads the copy's
checkpoints only, or refuses in one line before writing anything (the OwnWorkDirRunner they name)."""
import shutil
from pathlib import Path
from typing import List, Sequence

import pytest
import torch

from tool_process import (DET_CONFIG, LIBRARIES, REPO, check_ok, det_data_options, library_train_script,
                          load_checkpoint, run_script)

LAUNCHERS = [('ours', DET_CONFIG, det_data_options, 'det_work_dir'), *LIBRARIES]


def train_script(launcher: str) -> Path:
    return REPO / 'tools' / 'train.py' if launcher == 'ours' else library_train_script(launcher)


def copy_without(work_dir: Path, copy: Path, removed: Sequence[str] = ()) -> Path:
    """``cp -r work_dir copy``, then the ``removed`` files deleted from the copy."""
    shutil.copytree(work_dir, copy)
    for name in removed:
        (copy / name).unlink()
    return copy


def files_under(folder: Path) -> List[str]:
    """Every path below ``folder``, to compare before and after a run."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob('*'))


def foreign_checkpoint_error(copy: Path, original: Path) -> str:
    """The line a run resuming a copied work dir that lacks the last checkpoint ends with."""
    return (f'error: {copy}/last_checkpoint names {original}/iter_4.pth, a checkpoint outside '
            f"this run's folder {copy} (a copied or moved work dir?), and {copy}/iter_4.pth does "
            f'not exist: resume from a checkpoint of this work dir by naming it (--resume CKPT), '
            f'or delete {copy}/last_checkpoint to train from scratch')


@pytest.mark.parametrize('launcher,config,data_options,trained', LAUNCHERS)
def test_interrupted_and_resumed_equals_uninterrupted(launcher, config, data_options, trained, demo_root, tmp_path,
                                                      request):
    """The straight run is the shared 4-iteration run of our tools/train.py on the same config and options:
    each launcher's run, interrupted and resumed (ours from the checkpoint it names), ends with exactly its
    weights and schedule (the same training, whichever script)."""
    script, straight = train_script(launcher), request.getfixturevalue(trained)
    options, interrupted = ['train_cfg.val_interval=100', *data_options(demo_root)], tmp_path / 'interrupted'
    check_ok(run_script(script, [config, '--work-dir', interrupted, '--cfg-options', 'train_cfg.max_iters=2',
                                 *options]))
    assert not (interrupted / 'iter_4.pth').exists()
    named = [interrupted / 'iter_2.pth'] if launcher == 'ours' else []
    resumed = run_script(script, [config, '--work-dir', interrupted, '--resume', *named, '--cfg-options', *options])
    check_ok(resumed)
    assert 'resumed epoch: 0, iter: 2' in resumed.stdout + resumed.stderr

    expected, continued = (load_checkpoint(run / 'iter_4.pth') for run in (straight, interrupted))
    assert continued['meta']['iter'] == 4 and expected['state_dict'].keys() == continued['state_dict'].keys()
    differing = [key for key, value in expected['state_dict'].items()
                 if not torch.equal(value, continued['state_dict'][key])]
    assert not differing, f'{len(differing)} tensors differ, e.g. {differing[:3]}'
    assert [scheduler['last_step'] for scheduler in continued['param_schedulers']] == [
        scheduler['last_step'] for scheduler in expected['param_schedulers']]


@pytest.mark.parametrize('launcher', ['ours', 'mmdet'])
def test_copied_work_dir_resumes_from_its_own_checkpoint(launcher, det_work_dir, demo_root, tmp_path):
    copy = copy_without(det_work_dir, tmp_path / 'copy')
    result = run_script(train_script(launcher), [DET_CONFIG, '--work-dir', copy, '--resume', '--cfg-options',
                                                 'train_cfg.val_interval=100', *det_data_options(demo_root)])
    check_ok(result)
    output = result.stdout + result.stderr
    assert f'resuming from {copy}/iter_4.pth instead' in output
    assert f'Load checkpoint from {copy}/iter_4.pth' in output
    assert f'Load checkpoint from {det_work_dir}' not in output


@pytest.mark.parametrize('launcher,config,data_options,trained', LAUNCHERS)
def test_copied_work_dir_without_the_last_checkpoint_refuses(launcher, config, data_options, trained, demo_root,
                                                             tmp_path, request):
    original = request.getfixturevalue(trained)
    copy = copy_without(original, tmp_path / 'copy', removed=['iter_4.pth'])
    before = files_under(copy)
    result = run_script(train_script(launcher), [config, '--work-dir', copy, '--resume', '--cfg-options',
                                                 'train_cfg.val_interval=100', *data_options(demo_root)])
    assert result.returncode == 1
    assert 'Traceback' not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == foreign_checkpoint_error(copy, original)
    assert files_under(copy) == before  # refused before the runner wrote anything
