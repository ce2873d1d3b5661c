"""A bad input ends a tool before the run starts, with one line naming it: here as the user sees it, in a fresh
interpreter (tests/tools/test_bad_inputs_probe.py runs each tool on each kind in this process, and each check
has its unit tests beside its module); and --allow-partial-load loads what the refusal of a reshaped checkpoint
names."""
import torch

from tool_process import (DET_CONFIG, assert_fails_with, check_ok, det_data_options, exit_message, load_checkpoint,
                          run_tool)


def test_missing_config_in_a_subprocess(tmp_path):
    result = run_tool(['train.py', 'configs/demo/no_such_config.py', '--work-dir', tmp_path / 'work'],
                      fresh=True)
    assert_fails_with(result, 'error: config file not found: configs/demo/no_such_config.py',
                      tmp_path / 'work')


def test_reshaped_weights_are_refused_unless_partial_load_is_allowed(det_work_dir, demo_root, tmp_path, monkeypatch,
                                                                     capsys):
    trained = load_checkpoint(det_work_dir / 'iter_4.pth')
    trained['state_dict']['roi_head.bbox_head.fc_cls.weight'] = torch.zeros(11, 32)
    path = tmp_path / 'ten_classes.pth'
    torch.save(trained, path)
    args = [DET_CONFIG, '--work-dir', tmp_path / 'w', '--cfg-options', 'train_cfg.max_iters=1',
            'train_cfg.val_interval=100', f'load_from={path}', *det_data_options(demo_root)]
    message = exit_message('train.py', args, monkeypatch, capsys)
    assert message.startswith(
        f'error: load_from checkpoint {path} does not fit the model of {DET_CONFIG}: 1 tensors '
        'differ in shape (roi_head.bbox_head.fc_cls.weight: file (11, 32) vs model (4, 32)). ')
    assert not (tmp_path / 'w').exists()
    check_ok(run_tool(['train.py', *args, '--allow-partial-load']))
    assert (tmp_path / 'w' / 'iter_1.pth').is_file()


def test_missing_annotation_file(det_work_dir, demo_root, tmp_path, monkeypatch, capsys):
    checkpoint = det_work_dir / 'iter_4.pth'  # fits the model, so the data check is what fails
    message = exit_message('test.py', [DET_CONFIG, checkpoint, '--work-dir', tmp_path / 'w', '--cfg-options',
                                       f'test_dataloader.dataset.data_root={demo_root}/coco/',
                                       'test_dataloader.dataset.ann_file=missing.json'], monkeypatch, capsys)
    assert message.startswith(f'error: annotation file of test_dataloader not found: {demo_root}/coco/missing.json ')
    assert not (tmp_path / 'w').exists()
