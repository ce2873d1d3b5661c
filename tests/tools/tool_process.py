"""Run the repository's tools as a user would, ``python tools/X.py ARGS``, on the demo data."""
import atexit
import json
import os
import re
import runpy
import socket
import subprocess
import sys
import tempfile
from importlib import import_module
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import pytest

from mmrmt.checkpoint import load_weights_only
from mmrmt.upstream_fixes import distribution_installed
from helpers.tiny_configs import DET_CONFIG, SEG_CONFIG, TEST_CONFIGS  # noqa: F401 (the tool tests take them here)

REPO = Path(__file__).resolve().parents[2]
LOADERS = ('train_dataloader', 'val_dataloader', 'test_dataloader')


def tool_env() -> dict:
    """One thread a process (the tests share a small machine), this interpreter."""
    return dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1', PYTHON=sys.executable)


#: The tests/tools/preloaded_python.py server of this test process (started on first use), and its environment.
_preloaded: Optional[Tuple[subprocess.Popen, dict]] = None


def run_forked(argv: List[str], env: dict, timeout: float) -> Optional[subprocess.CompletedProcess]:
    """``subprocess.run([sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True,
    timeout=timeout)`` in a child forked from an interpreter that has the heavy libraries imported (see
    tests/tools/preloaded_python.py for what a child gets, and what not); None where ``env`` is not the
    environment that interpreter started with, up to the variables pytest sets per test (a variable read
    on import would be missed: such a run needs a fresh interpreter)."""
    global _preloaded
    if _preloaded is None:
        _preloaded = subprocess.Popen([sys.executable, str(Path(__file__).with_name('preloaded_python.py'))],
                                      cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE), env
        atexit.register(_preloaded[0].communicate, timeout=60)
    server, started = _preloaded
    if {**started, 'PYTEST_CURRENT_TEST': ''} != {**env, 'PYTEST_CURRENT_TEST': ''}:
        return None
    with tempfile.TemporaryDirectory() as streams:
        stdout, stderr = Path(streams, 'stdout'), Path(streams, 'stderr')
        request = dict(argv=argv, cwd=str(REPO), env=env, stdout=str(stdout), stderr=str(stderr), timeout=timeout)
        server.stdin.write((json.dumps(request) + '\n').encode())
        server.stdin.flush()
        ended = server.stdout.readline()
        assert ended, f'the preloaded interpreter exited with status {server.wait()} (its error: stderr)'
        returncode, command = json.loads(ended)['returncode'], [sys.executable, *argv]
        if returncode is None:
            raise subprocess.TimeoutExpired(command, timeout, stdout.read_text(), stderr.read_text())
        return subprocess.CompletedProcess(command, returncode, stdout.read_text(), stderr.read_text())


def run_script(script: Path, args: Sequence[object], timeout: float = 300,
               fresh: bool = False) -> subprocess.CompletedProcess:
    """Run a Python or shell script with ``args`` from the repo root, as
    ``python SCRIPT ARGS`` / ``bash SCRIPT ARGS`` would. A Python script runs
    forked from the preloaded interpreter unless ``fresh`` (a new interpreter)."""
    args, env = [str(arg) for arg in args], tool_env()
    forked = None if fresh or script.suffix == '.sh' else run_forked([str(script), *args], env, timeout)
    if forked is not None:
        return forked
    command = ['bash', str(script)] if script.suffix == '.sh' else [sys.executable, str(script)]
    return subprocess.run(command + args, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def library_train_script(library: str) -> Path:
    """The tools/train.py shipped inside an installed mmdet / mmseg package."""
    return Path(import_module(library).__file__).parent / '.mim' / 'tools' / 'train.py'


#: Whether mmseg's own tools/train.py and test.py read our segmentation configs. They read a config
#: before its custom_imports (mmrmt, whose import lets mmengine find the onedl fork's mmseg), and
#: mmengine looks its ``mmseg::`` bases up under upstream's distribution name, ``mmsegmentation``,
#: not the fork's ``onedl-mmsegmentation`` (onedl-mmengine 0.10.12 too): on the forks they stop
#: with the line :data:`MMSEG_TOOLS_STOP` (docs/troubleshooting.md; our tools/train.py and
#: tools/test.py read the configs on either family).
MMSEG_TOOLS_READ_OUR_CONFIGS = distribution_installed('mmsegmentation')
MMSEG_TOOLS_STOP = 'ModuleNotFoundError: mmsegmentation is not installed, please install mmsegmentation manually'
#: A test of mmseg's own tools reading our configs: expected to fail where they cannot (it then must).
READ_BY_MMSEG_TOOLS = pytest.mark.xfail(not MMSEG_TOOLS_READ_OUR_CONFIGS, strict=True,
                                        reason=f'mmseg\'s own tools cannot read our configs here: {MMSEG_TOOLS_STOP}')


def assert_mmseg_tools_stop(result: subprocess.CompletedProcess) -> None:
    """mmseg's own tool stopped at our config's ``mmseg::`` bases (see :data:`MMSEG_TOOLS_READ_OUR_CONFIGS`),
    before anything of the run."""
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == MMSEG_TOOLS_STOP, result.stderr[-3000:]


def run_tool(args: Sequence[object], timeout: float = 300, fresh: bool = False) -> subprocess.CompletedProcess:
    """Run ``tools/<args[0]>`` with the remaining arguments from the repo root (see :func:`run_script`)."""
    return run_script(REPO / 'tools' / str(args[0]), args[1:], timeout, fresh)


def det_data_options(root: Path) -> List[str]:
    """--cfg-options pointing the detection test config at a demo data folder."""
    coco = root / 'coco'
    ann = coco / 'annotations' / 'instances_val.json'
    return ([f'{loader}.dataset.data_root={coco}/' for loader in LOADERS]
            + [f'val_evaluator.ann_file={ann}', f'test_evaluator.ann_file={ann}'])


def seg_data_options(root: Path) -> List[str]:
    """--cfg-options pointing the segmentation test config at a demo data folder."""
    return [f'{loader}.dataset.data_root={root / "ade"}/' for loader in LOADERS]


#: mmdet's and mmseg's own tools/train.py on our test configs (mmseg's stops at their mmseg:: bases on the forks):
#: pytest params of (library, config, its data options, the fixture of our tools/train.py's run of it).
LIBRARIES = [('mmdet', DET_CONFIG, det_data_options, 'det_work_dir'),
             pytest.param('mmseg', SEG_CONFIG, seg_data_options, 'seg_work_dir', marks=READ_BY_MMSEG_TOOLS)]


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
    return load_weights_only(path, map_location='cpu')


def exit_message(tool: str, args, monkeypatch, capsys) -> str:
    """Run ``tools/<tool>`` in-process; return what it exits with (printed as one line)."""
    monkeypatch.setattr(sys, 'argv', [tool, *map(str, args)])
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(str(REPO / 'tools' / tool), run_name='__main__')
    captured = capsys.readouterr()
    assert captured.out == '' and captured.err == '', 'the tool printed more than its error'
    assert isinstance(exited.value.code, str) and '\n' not in exited.value.code
    return exited.value.code
