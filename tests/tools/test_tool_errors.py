"""Wrong paths fail fast, before anything is built, with one line naming them.

One case runs the tool in a subprocess (the line is all the user sees); the
others run the tool's main() in this process, which is the same code path
without paying a fresh interpreter each time.
"""
import runpy
import sys

import pytest
import torch
from tool_process import DET_CONFIG, REPO, SEG_CONFIG, run_tool


def assert_fails_with(result, message: str, work_dir) -> None:
    """The tool exits non-zero, its stderr is the one line starting with ``message``,
    and no run began (the work dir was never created)."""
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr[-2000:]
    assert 'Traceback' not in result.stdout + result.stderr
    assert not work_dir.exists(), 'the run started before failing'


def exit_message(tool: str, args, monkeypatch, capsys) -> str:
    """Run ``tools/<tool>`` in-process; return what it exits with (printed as one line)."""
    monkeypatch.setattr(sys, 'argv', [tool, *map(str, args)])
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(REPO / 'tools' / tool), run_name='__main__')
    captured = capsys.readouterr()
    assert captured.out == '' and captured.err == '', 'the tool printed more than its error'
    assert isinstance(exited.value.code, str) and '\n' not in exited.value.code
    return exited.value.code


def test_missing_config_in_a_subprocess(tmp_path):
    result = run_tool(['train.py', 'configs/demo/no_such_config.py', '--work-dir', tmp_path / 'work'])
    assert_fails_with(result, 'error: config file not found: configs/demo/no_such_config.py',
                      tmp_path / 'work')


def test_test_tool_missing_config(tmp_path, monkeypatch, capsys):
    message = exit_message('test.py', ['no_such_config.py', 'x.pth', '--work-dir', tmp_path / 'w'],
                           monkeypatch, capsys)
    assert message == 'error: config file not found: no_such_config.py'
    assert not (tmp_path / 'w').exists()


def test_missing_data_root(tmp_path, monkeypatch, capsys):
    missing = tmp_path / 'no_data'
    message = exit_message('train.py', [SEG_CONFIG, '--work-dir', tmp_path / 'w', '--cfg-options',
                                        f'train_dataloader.dataset.data_root={missing}'],
                           monkeypatch, capsys)
    assert message.startswith(f'error: data root of train_dataloader not found: {missing} ')
    assert 'make_demo_data.py' in message
    assert not (tmp_path / 'w').exists()


def test_missing_annotation_file(det_work_dir, demo_root, tmp_path, monkeypatch, capsys):
    checkpoint = det_work_dir / 'iter_4.pth'  # fits the model, so the data check is what fails
    message = exit_message('test.py', [DET_CONFIG, checkpoint, '--work-dir', tmp_path / 'w',
                                       '--cfg-options',
                                       f'test_dataloader.dataset.data_root={demo_root}/coco/',
                                       'test_dataloader.dataset.ann_file=missing.json'],
                           monkeypatch, capsys)
    assert message.startswith('error: annotation file of test_dataloader not found: '
                              f'{demo_root}/coco/missing.json ')


@pytest.mark.parametrize('tool,args,expected', [
    ('train.py', ['--resume', 'missing.pth'], 'error: --resume checkpoint not found: missing.pth'),
    ('train.py', ['--cfg-options', 'load_from=missing.pth'],
     'error: load_from checkpoint not found: missing.pth'),
    ('test.py', [], 'error: checkpoint not found: missing.pth'),
])
def test_missing_checkpoint(tool, args, expected, tmp_path, monkeypatch, capsys):
    positional = [DET_CONFIG, 'missing.pth'] if tool == 'test.py' else [DET_CONFIG]
    message = exit_message(tool, [*positional, '--work-dir', tmp_path / 'w', *args],
                           monkeypatch, capsys)
    assert message == expected
    assert not (tmp_path / 'w').exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason='--amp runs where CUDA is available')
def test_amp_is_refused_without_cuda(tmp_path, monkeypatch, capsys):
    message = exit_message('train.py', [DET_CONFIG, '--work-dir', tmp_path / 'w', '--amp'],
                           monkeypatch, capsys)
    assert message == 'error: --amp needs a CUDA device; train without --amp on the CPU'
