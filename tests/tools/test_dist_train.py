"""tools/dist_train.sh CONFIG 2 trains on the CPU with two gloo processes."""
from tool_process import SEG_CONFIG, check_ok, free_port, run_tool, seg_data_options


def test_two_cpu_processes_train_and_validate(demo_root, tmp_path, monkeypatch):
    monkeypatch.setenv('PORT', str(free_port()))
    result = run_tool(['dist_train.sh', SEG_CONFIG, 2, '--work-dir', tmp_path, '--cfg-options',
                       'train_cfg.max_iters=2', 'train_cfg.val_interval=2',
                       *seg_data_options(demo_root)])
    check_ok(result)
    output = result.stdout + result.stderr
    assert 'Distributed training: True' in output
    # 8 validation images, one a batch: each of the two processes runs 4 of them
    assert 'Iter(val) [4/4]' in output and 'Iter(val) [8/8]' not in output
    assert 'mIoU' in output
    assert (tmp_path / 'iter_2.pth').is_file()
