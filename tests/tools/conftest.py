"""Shared fixtures of the tool tests: one short detection and one short
segmentation training whose checkpoints several tests read, and one
evaluation of each by tools/test.py whose outputs several tests check (the
demo data comes from tests/conftest.py)."""
from dataclasses import dataclass
from pathlib import Path
from typing import List

import pytest

from tool_process import DET_CONFIG, SEG_CONFIG, check_ok, det_data_options, run_tool, seg_data_options


@dataclass
class Evaluation:
    """A finished tools/test.py run: what it printed (the metrics) and the
    predictions it dumped (``--out``) and painted (``--show-dir``)."""
    stdout: str
    out: Path
    show: Path


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


def evaluate_trained(config: Path, work_dir: Path, data_options: List[str], folder: Path,
                     out_name: str) -> Evaluation:
    """tools/test.py on ``work_dir``'s last checkpoint, dumping the predictions
    (--out ``folder/out_name``) and painting them (--show-dir) under ``folder``."""
    out, show = folder / out_name, folder / 'show'
    result = run_tool(['test.py', config, work_dir / 'iter_4.pth', '--work-dir', folder / 'work',
                       '--out', out, '--show-dir', show, '--cfg-options', *data_options])
    check_ok(result)
    return Evaluation(result.stdout, out, show)


@pytest.fixture(scope='session')
def det_test_run(det_work_dir, demo_root, tmp_path_factory) -> Evaluation:
    """The 4-iteration detector evaluated by tools/test.py (``out``: the pickled predictions)."""
    return evaluate_trained(DET_CONFIG, det_work_dir, det_data_options(demo_root),
                            tmp_path_factory.mktemp('det_test'), 'predictions.pkl')


@pytest.fixture(scope='session')
def seg_test_run(seg_work_dir, demo_root, tmp_path_factory) -> Evaluation:
    """The 4-iteration segmentor evaluated by tools/test.py (``out``: a folder of label maps)."""
    return evaluate_trained(SEG_CONFIG, seg_work_dir, seg_data_options(demo_root),
                            tmp_path_factory.mktemp('seg_test'), 'label_maps')
