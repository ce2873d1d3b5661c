"""No tool runs text a checkpoint holds.

Every tool that reads a checkpoint is given our own training checkpoint whose
saved config (``meta['cfg']``, and mmcv 1.x's ``meta['config']``) starts with
a line that, if anything executed it, would create a marker file. Each tool
does its job as usual (the text is never read as code), and the marker never
appears. The model converters, which read the saved config for the backbone's
arch, have their cases in test_model_converters.py and test_upstream_trained.py.
"""
from pathlib import Path
from typing import Tuple

import pytest
import torch

from helpers.code_in_checkpoint import with_code_in_saved_config
from helpers.tool_modules import import_tool
from tool_process import (DET_CONFIG, check_ok, det_data_options, exit_message, library_train_script, load_checkpoint,
                          run_script, run_tool)


@pytest.fixture
def trap(det_work_dir, tmp_path) -> Tuple[Path, Path]:
    """(a copy of the 4-iteration detection checkpoint with code in its saved config, the marker)."""
    marker, path = tmp_path / 'PWNED', tmp_path / 'trap.pth'
    torch.save(with_code_in_saved_config(load_checkpoint(det_work_dir / 'iter_4.pth'), marker), path)
    return path, marker


def test_train_resume_refuses_a_file_whose_resume_would_run_code(trap, demo_root, tmp_path, monkeypatch, capsys):
    """mmengine's Runner.resume runs ``meta['config']``: such a file is refused in preflight."""
    checkpoint, marker = trap
    message = exit_message('train.py', [DET_CONFIG, '--work-dir', tmp_path / 'work', '--resume', checkpoint,
                                        '--cfg-options', 'train_cfg.val_interval=100', *det_data_options(demo_root)],
                           monkeypatch, capsys)
    assert message.startswith(f'error: --resume checkpoint the config saved in {checkpoint} (meta.config) is '
                              'not plain data, so it was not read (nor run): line 1: ')
    assert not (tmp_path / 'work').exists() and not marker.exists()


def test_mmdet_train_script_resumes_without_running_code(trap, demo_root, tmp_path):
    """mmdet's own train.py on our config: the runner the config names, and the guard of
    mmengine's checkpoint loading, keep its resume from running ``meta['config']``."""
    checkpoint, marker = trap
    result = run_script(library_train_script('mmdet'),
                        [DET_CONFIG, '--work-dir', tmp_path / 'work', '--resume', checkpoint,
                         '--cfg-options', 'train_cfg.val_interval=100', *det_data_options(demo_root)])
    check_ok(result)
    assert 'resumed epoch: 0, iter: 4' in result.stdout + result.stderr and not marker.exists()


def test_test_tool(trap, demo_root, tmp_path):
    checkpoint, marker = trap
    check_ok(run_tool(['test.py', DET_CONFIG, checkpoint, '--work-dir', tmp_path / 'work',
                       '--cfg-options', *det_data_options(demo_root)]))
    assert not marker.exists()


def test_image_demo(trap, demo_root, tmp_path):
    checkpoint, marker = trap
    check_ok(run_tool(['../demo/image_demo.py', demo_root / 'coco' / 'val' / 'val_0000.jpg', DET_CONFIG,
                       '--weights', checkpoint, '--out-dir', tmp_path / 'out', '--device', 'cpu']))
    assert (tmp_path / 'out' / 'preds' / 'val_0000.json').is_file() and not marker.exists()


def test_pytorch2onnx(trap, tmp_path):
    checkpoint, marker = trap
    import_tool('tools/deployment/pytorch2onnx.py').main(
        [str(DET_CONFIG), '--weights', str(checkpoint), '--shape', '64', '64', '--backbone-only',
         '--out', str(tmp_path / 'backbone.onnx')])
    assert (tmp_path / 'backbone.onnx').is_file() and not marker.exists()


def test_visualize_decay(trap, demo_root, tmp_path):
    checkpoint, marker = trap
    import_tool('tools/analysis_tools/visualize_decay.py').main(
        [str(DET_CONFIG), '--image', str(demo_root / 'coco' / 'val' / 'val_0000.jpg'), '--weights', str(checkpoint),
         '--out', str(tmp_path / 'decay.png')])
    assert (tmp_path / 'decay.png').is_file() and not marker.exists()
