"""Shared fixtures of the tool tests: one short detection and one short
segmentation training whose checkpoints several tests read (the demo data
comes from tests/conftest.py)."""
from pathlib import Path

import pytest
from tool_process import DET_CONFIG, SEG_CONFIG, check_ok, det_data_options, run_tool, seg_data_options


@pytest.fixture(scope='session')
def det_work_dir(demo_root, tmp_path_factory) -> Path:
    """A 4-iteration detection run (checkpoints at 2 and 4), no validation."""
    work_dir = tmp_path_factory.mktemp('det_train')
    result = run_tool(['train.py', DET_CONFIG, '--work-dir', work_dir, '--cfg-options',
                       'train_cfg.val_interval=100', *det_data_options(demo_root)])
    check_ok(result)
    return work_dir


@pytest.fixture(scope='session')
def seg_work_dir(demo_root, tmp_path_factory) -> Path:
    """A 4-iteration segmentation run (checkpoints at 2 and 4), no validation."""
    work_dir = tmp_path_factory.mktemp('seg_train')
    check_ok(run_tool(['train.py', SEG_CONFIG, '--work-dir', work_dir, '--cfg-options',
                       'train_cfg.val_interval=100', *seg_data_options(demo_root)]))
    return work_dir
