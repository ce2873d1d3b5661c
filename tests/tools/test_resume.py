"""A run interrupted after 2 iterations and resumed ends with exactly the
weights of an uninterrupted 4-iteration run (same seed, deterministic mode)."""
import torch
from tool_process import DET_CONFIG, check_ok, det_data_options, load_checkpoint, run_tool


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
