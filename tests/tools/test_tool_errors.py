"""Wrong paths fail fast, before anything is built, with one line naming them."""
import pytest
import torch
from tool_process import DET_CONFIG, SEG_CONFIG, run_tool


def assert_fails_with(result, message: str, work_dir) -> None:
    """The tool exits non-zero, its stderr is the one line starting with ``message``,
    and no run began (the work dir was never created)."""
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr[-2000:]
    assert 'Traceback' not in result.stdout + result.stderr
    assert not work_dir.exists(), 'the run started before failing'


def test_missing_config(tmp_path):
    result = run_tool(['train.py', 'configs/demo/no_such_config.py', '--work-dir', tmp_path / 'work'])
    assert_fails_with(result, 'error: config file not found: configs/demo/no_such_config.py',
                      tmp_path / 'work')


def test_missing_data_root(tmp_path):
    missing = tmp_path / 'no_data'
    result = run_tool(['train.py', SEG_CONFIG, '--work-dir', tmp_path / 'work', '--cfg-options',
                       f'train_dataloader.dataset.data_root={missing}'])
    assert_fails_with(result, f'error: data root of train_dataloader not found: {missing} ',
                      tmp_path / 'work')
    assert 'make_demo_data.py' in result.stderr


def test_missing_resume_checkpoint(tmp_path):
    result = run_tool(['train.py', DET_CONFIG, '--work-dir', tmp_path / 'work',
                       '--resume', tmp_path / 'missing.pth'])
    assert_fails_with(result, f'error: --resume checkpoint not found: {tmp_path / "missing.pth"}',
                      tmp_path / 'work')


def test_missing_test_checkpoint(tmp_path):
    result = run_tool(['test.py', DET_CONFIG, tmp_path / 'missing.pth', '--work-dir',
                       tmp_path / 'work'])
    assert_fails_with(result, f'error: checkpoint not found: {tmp_path / "missing.pth"}',
                      tmp_path / 'work')


@pytest.mark.skipif(torch.cuda.is_available(), reason='--amp runs where CUDA is available')
def test_amp_is_refused_without_cuda(tmp_path):
    result = run_tool(['train.py', DET_CONFIG, '--work-dir', tmp_path / 'work', '--amp'])
    assert_fails_with(result, 'error: --amp needs a CUDA device; train without --amp on the CPU',
                      tmp_path / 'work')
