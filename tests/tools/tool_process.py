"""Run the repository's tools in subprocesses, as a user would, on the demo data."""
import os
import re
import runpy
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import List, Sequence

import pytest
import torch

import mmrmt  # noqa: F401  (lets weights-only torch.load read mmengine checkpoints)

REPO = Path(__file__).resolve().parents[2]
TEST_CONFIGS = REPO / 'tests' / 'data' / 'configs'
DET_CONFIG = TEST_CONFIGS / 'mask-rcnn_rmt-tiny_fpn_test.py'
SEG_CONFIG = TEST_CONFIGS / 'upernet_rmt-tiny_test.py'
LOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


@dataclass
class Evaluation:
    """A finished tools/test.py run: what it printed (the metrics) and the
    predictions it dumped (``--out``) and painted (``--show-dir``)."""
    stdout: str
    out: Path
    show: Path


def tool_env() -> dict:
    """One thread a process (the tests share a small machine), this interpreter."""
    return dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', PYTHON=sys.executable)


def run_script(script: Path, args: Sequence[object], timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a Python or shell script with ``args`` from the repo root."""
    command = ['bash', str(script)] if script.suffix == '.sh' else [sys.executable, str(script)]
    return subprocess.run(command + [str(arg) for arg in args], cwd=REPO, env=tool_env(),
                          capture_output=True, text=True, timeout=timeout)


def library_train_script(library: str) -> Path:
    """The tools/train.py shipped inside an installed mmdet / mmseg package."""
    return Path(import_module(library).__file__).parent / '.mim' / 'tools' / 'train.py'


def run_tool(args: Sequence[object], timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``tools/<args[0]>`` with the remaining arguments from the repo root."""
    return run_script(REPO / 'tools' / str(args[0]), args[1:], timeout)


def det_data_options(root: Path) -> List[str]:
    """--cfg-options pointing the detection test config at a demo data folder."""
    coco = root / 'coco'
    ann = coco / 'annotations' / 'instances_val.json'
    return ([f'{loader}.dataset.data_root={coco}/' for loader in LOADERS]
            + [f'val_evaluator.ann_file={ann}', f'test_evaluator.ann_file={ann}'])


def seg_data_options(root: Path) -> List[str]:
    """--cfg-options pointing the segmentation test config at a demo data folder."""
    return [f'{loader}.dataset.data_root={root / "ade"}/' for loader in LOADERS]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def check_ok(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f'tool failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}'


def metric(output: str, name: str) -> float:
    """The last value of metric ``name`` a tool printed."""
    found = re.findall(rf'{re.escape(name)}: (-?\d+\.\d+)', output)
    assert found, f'{name} not printed:\n{output[-2000:]}'
    return float(found[-1])


def load_checkpoint(path: Path) -> dict:
    """A checkpoint a training tool wrote, read with torch's weights-only unpickler."""
    return torch.load(path, map_location='cpu', weights_only=True)


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


def copy_without(work_dir: Path, copy: Path, removed: Sequence[str] = ()) -> Path:
    """``cp -r work_dir copy``, then the ``removed`` files deleted from the copy."""
    shutil.copytree(work_dir, copy)
    for name in removed:
        (copy / name).unlink()
    return copy


def files_under(folder: Path) -> List[str]:
    """Every path below ``folder``, to compare before and after a run."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob('*'))


def foreign_checkpoint_error(copy: Path, original: Path) -> str:
    """The line a run resuming a copied work dir that lacks the last checkpoint ends with."""
    return (f'error: {copy}/last_checkpoint names {original}/iter_4.pth, a checkpoint outside '
            f"this run's folder {copy} (a copied or moved work dir?), and {copy}/iter_4.pth does "
            f'not exist: resume from a checkpoint of this work dir by naming it (--resume CKPT), '
            f'or delete {copy}/last_checkpoint to train from scratch')
