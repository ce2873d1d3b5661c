"""Shared fixtures of the tool tests: demo data in a temporary folder and one
short detection training whose checkpoints several tests read."""
from pathlib import Path

import pytest
from tool_process import DET_CONFIG, check_ok, det_data_options, run_tool

from mmrmt.datasets import make_demo_data


@pytest.fixture(scope='session')
def demo_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp('demo_data')
    make_demo_data(str(root))
    return root


@pytest.fixture(scope='session')
def det_work_dir(demo_root, tmp_path_factory) -> Path:
    """A 4-iteration detection run (checkpoints at 2 and 4), no validation."""
    work_dir = tmp_path_factory.mktemp('det_train')
    result = run_tool(['train.py', DET_CONFIG, '--work-dir', work_dir, '--cfg-options',
                       'train_cfg.val_interval=100', *det_data_options(demo_root)])
    check_ok(result)
    return work_dir
