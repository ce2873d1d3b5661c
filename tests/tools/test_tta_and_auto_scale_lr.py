"""tools/test.py --tta (flip and multi-scale views merged by the config's TTA
model) and tools/train.py --auto-scale-lr (learning rate x batch / base batch). (How a TTA model merges
the views is tests/test_models/test_test_time_augs.py's; --tta without a TTA model and --auto-scale-lr without a
base batch size are tests/test_utils/test_run_config_refusals.py's.)"""
from tool_process import (DET_CONFIG, SEG_CONFIG, check_ok, det_data_options, load_checkpoint, metric, run_tool,
                          seg_data_options)


def test_tta_evaluates_detection(det_work_dir, demo_root, tmp_path):
    result = run_tool(['test.py', DET_CONFIG, det_work_dir / 'iter_4.pth', '--tta', '--work-dir',
                       tmp_path / 'work', '--cfg-options', *det_data_options(demo_root)])
    check_ok(result)
    for name in ('coco/bbox_mAP', 'coco/segm_mAP'):
        assert 0.0 <= metric(result.stdout, name) <= 1.0
    dumped = tmp_path / 'work' / DET_CONFIG.name  # the config the run used, as the runner saved it
    text = dumped.read_text()
    assert "type='mmrmt.InstanceSegTTAModel'" in text and "type='TestTimeAug'" in text


def test_tta_evaluates_segmentation(seg_work_dir, seg_test_run, demo_root, tmp_path):
    augmented = run_tool(['test.py', SEG_CONFIG, seg_work_dir / 'iter_4.pth', '--tta', '--work-dir',
                          tmp_path / 'work', '--cfg-options', *seg_data_options(demo_root)])
    check_ok(augmented)
    # twelve views (six scales, flipped and not) give other label maps than one view (seg_test_run)
    assert 0.0 <= metric(augmented.stdout, 'mIoU') <= 100.0
    assert metric(augmented.stdout, 'aAcc') != metric(seg_test_run.stdout, 'aAcc')


def test_auto_scale_lr_scales_by_the_batch_ratio(det_work_dir, demo_root, tmp_path):
    """The test config trains with batches of 2; the demo bases' learning rate
    is set for 4: the optimizer starts at half the rate of a plain run."""
    result = run_tool(['train.py', DET_CONFIG, '--auto-scale-lr', '--work-dir', tmp_path, '--cfg-options',
                       'train_cfg.max_iters=1', 'default_hooks.checkpoint.interval=1',
                       'train_cfg.val_interval=100', *det_data_options(demo_root)])
    check_ok(result)
    scaled = load_checkpoint(tmp_path / 'iter_1.pth')['optimizer']['param_groups']
    plain = load_checkpoint(det_work_dir / 'iter_4.pth')['optimizer']['param_groups']
    assert [group['initial_lr'] for group in plain] == [1e-3] * len(plain)
    assert [group['initial_lr'] for group in scaled] == [0.5e-3] * len(plain)
