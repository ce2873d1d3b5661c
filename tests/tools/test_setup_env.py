"""The parts of tools/misc/setup_env.sh that can be checked without building
an environment: finding the mmcv wheel (another torch's under its own
subfolder), an unknown FAMILY, a torch without its torchvision (what the
Makefile hands it: tests/test_makefile.py)."""
import subprocess
import zipfile
from pathlib import Path

import pytest

from tool_process import REPO, run_tool

WHEEL = 'mmcv-2.1.0-cp311-cp311-linux_x86_64.whl'


def find_wheel(*folders, under: str = '') -> subprocess.CompletedProcess:
    return run_tool(['misc/find_wheel.sh', *(['--under', under] if under else []), WHEEL, *folders], timeout=60)


def write_wheel(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / WHEEL, 'w') as wheel:
        wheel.writestr('mmcv/__init__.py', "__version__ = '2.1.0'\n")
    return folder / WHEEL


@pytest.fixture
def empty_cache(tmp_path) -> Path:
    """``$XDG_CACHE_HOME/mmrmt/wheels`` as an interrupted first build leaves it."""
    cache = tmp_path / 'cache' / 'mmrmt' / 'wheels'
    cache.mkdir(parents=True)
    (cache / 'build-leftover.log').write_text('interrupted')
    return cache


def test_wheelhouse_with_a_space_is_found_beside_an_empty_cache(empty_cache, tmp_path):
    wheel = write_wheel(tmp_path / 'shared wheels')
    result = find_wheel(wheel.parent, empty_cache)
    assert result.returncode == 0 and result.stdout == f'{wheel}\n'


def test_unset_wheelhouse_and_cache_wheel(tmp_path):
    wheel = write_wheel(tmp_path / 'cache')
    result = find_wheel('', tmp_path / 'missing', wheel.parent)
    assert result.returncode == 0 and result.stdout == f'{wheel}\n'


def test_half_written_wheel_is_skipped(tmp_path):
    partial = write_wheel(tmp_path / 'first')
    partial.write_bytes(partial.read_bytes()[:40])
    wheel = write_wheel(tmp_path / 'second')
    assert find_wheel(partial.parent, wheel.parent).stdout == f'{wheel}\n'


def test_no_wheel_anywhere_is_status_1_and_silent(empty_cache, tmp_path):
    result = find_wheel('', empty_cache, tmp_path / 'missing')
    assert result.returncode == 1 and result.stdout == '' and result.stderr == ''


def test_each_torch_finds_its_own_wheel_only(tmp_path):
    """The floor's setup (``--under torch-2.7.1``) and the default one share the wheel folders, and
    their mmcv wheels the file name: neither takes the other's."""
    default, floor = write_wheel(tmp_path / 'house'), write_wheel(tmp_path / 'cache' / 'torch-2.7.1')
    assert find_wheel(tmp_path / 'house', tmp_path / 'cache').stdout.strip() == str(default)
    assert find_wheel(tmp_path / 'house', tmp_path / 'cache', under='torch-2.7.1').stdout.strip() == str(floor)
    assert find_wheel(tmp_path / 'cache').returncode == 1  # the floor's wheel only: no default one
    assert find_wheel(tmp_path / 'house', under='torch-2.7.1').returncode == 1  # the default's only


@pytest.mark.parametrize('setting,error', [
    (dict(FAMILY='onedI'),
     "FAMILY must be openmmlab (upstream OpenMMLab) or onedl (its maintained forks), not 'onedI'"),
    (dict(TORCH='2.7.1'),
     'set TORCH and TORCHVISION together (e.g. TORCH=2.7.1 TORCHVISION=0.22.1), not only one of them'),
], ids=['unknown-family', 'torch-without-torchvision'])
def test_a_wrong_setting_is_one_line_before_anything_is_made(setting, error, tmp_path):
    venv = tmp_path / 'venv'
    env = {'PATH': '/usr/bin:/bin', 'HOME': str(tmp_path), 'VENV': str(venv), **setting}
    result = subprocess.run(['bash', str(REPO / 'tools' / 'misc' / 'setup_env.sh')], capture_output=True, text=True,
                            timeout=60, env=env)
    assert result.returncode == 1 and result.stdout == ''
    assert result.stderr == f'[setup] error: {error}\n'
    assert not venv.exists()
