"""A run interrupted after 2 iterations and resumed ends with exactly the
weights of an uninterrupted 4-iteration run (same seed, deterministic mode);
``--resume`` in a copied work dir reads the copy's checkpoints only."""
import torch

from tool_process import (DET_CONFIG, check_ok, copy_without, det_data_options, files_under, foreign_checkpoint_error,
                          load_checkpoint, run_tool)


def test_interrupted_and_resumed_equals_uninterrupted(det_work_dir, demo_root, tmp_path):
    options = ['train_cfg.val_interval=100', *det_data_options(demo_root)]
    interrupted, resumed = tmp_path / 'interrupted', tmp_path / 'resumed'
    check_ok(run_tool(['train.py', DET_CONFIG, '--work-dir', interrupted, '--cfg-options',
                       'train_cfg.max_iters=2', *options]))
    assert not (interrupted / 'iter_4.pth').exists()
    result = run_tool(['train.py', DET_CONFIG, '--work-dir', resumed, '--resume',
                       interrupted / 'iter_2.pth', '--cfg-options', *options])
    check_ok(result)
    assert 'resumed epoch: 0, iter: 2' in result.stdout + result.stderr

    straight, continued = (load_checkpoint(run / 'iter_4.pth') for run in (det_work_dir, resumed))
    assert continued['meta']['iter'] == 4
    assert straight['state_dict'].keys() == continued['state_dict'].keys()
    differing = [key for key, value in straight['state_dict'].items()
                 if not torch.equal(value, continued['state_dict'][key])]
    assert not differing, f'{len(differing)} tensors differ, e.g. {differing[:3]}'
    lr = [scheduler['last_step'] for scheduler in continued['param_schedulers']]
    assert lr == [scheduler['last_step'] for scheduler in straight['param_schedulers']]


def test_copied_work_dir_resumes_from_its_own_checkpoint(det_work_dir, demo_root, tmp_path):
    copy = copy_without(det_work_dir, tmp_path / 'copy')
    result = run_tool(['train.py', DET_CONFIG, '--work-dir', copy, '--resume', '--cfg-options',
                       'train_cfg.val_interval=100', *det_data_options(demo_root)])
    check_ok(result)
    output = result.stdout + result.stderr
    assert f'resuming from {copy}/iter_4.pth instead' in output
    assert f'Load checkpoint from {copy}/iter_4.pth' in output
    assert f'Load checkpoint from {det_work_dir}' not in output


def test_copied_work_dir_without_the_last_checkpoint_refuses(det_work_dir, demo_root, tmp_path):
    copy = copy_without(det_work_dir, tmp_path / 'copy', removed=['iter_4.pth'])
    before = files_under(copy)
    result = run_tool(['train.py', DET_CONFIG, '--work-dir', copy, '--resume', '--cfg-options',
                       'train_cfg.val_interval=100', *det_data_options(demo_root)])
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == foreign_checkpoint_error(copy, det_work_dir)
    assert files_under(copy) == before
