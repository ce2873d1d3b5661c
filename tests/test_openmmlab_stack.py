"""import mmrmt checks the mmcv and mmengine it runs on, from either OpenMMLab family,
and says in one line what to install when one is missing or of another version."""
import subprocess
import sys
from pathlib import Path

import mmcv
import mmengine
import pytest

from mmrmt.openmmlab_stack import INSTALL_EITHER_FAMILY, SUPPORTED_VERSIONS, check_openmmlab_stack, release

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize('version,numbers', [
    ('2.1.0', (2, 1, 0)), ('2.3.6', (2, 3, 6)), ('0.10.8rc1', (0, 10, 8)), ('2.14.1+cpu', (2, 14, 1)),
])
def test_release(version, numbers):
    assert release(version) == numbers


def test_the_installed_stack_passes():
    check_openmmlab_stack()
    for module in (mmcv, mmengine):
        lowest, beyond = SUPPORTED_VERSIONS[module.__name__]
        assert release(lowest) <= release(module.__version__) < release(beyond)


def import_mmrmt_with(tmp_path: Path, module: str, version: str) -> subprocess.CompletedProcess:
    """``import mmrmt`` with a stand-in ``module`` of ``version`` first on the path
    (version None: the module made unimportable)."""
    (tmp_path / module).mkdir()
    body = f'__version__ = {version!r}\n' if version else "raise ImportError('no module')\n"
    (tmp_path / module / '__init__.py').write_text(body)
    return subprocess.run([sys.executable, '-c', 'import mmrmt'], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={'PYTHONPATH': f'{tmp_path}:{REPO}', 'PATH': '/usr/bin:/bin'})


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize('module,version,said', [
    ('mmcv', '1.7.2', 'mmrmt needs mmcv >=2.1.0,<2.4.0, not 1.7.2: '),
    ('mmcv', '2.4.0', 'mmrmt needs mmcv >=2.1.0,<2.4.0, not 2.4.0: '),
    ('mmengine', '1.0.0', 'mmrmt needs mmengine >=0.10.0,<1.0.0, not 1.0.0: '),
    ('mmengine', None, 'mmrmt needs mmengine >=0.10.0,<1.0.0, which is not installed: '),
])
def test_an_unsupported_or_missing_module_is_one_line_naming_both_families(tmp_path, module, version, said):
    result = import_mmrmt_with(tmp_path, module, version)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == f'ImportError: {said}{INSTALL_EITHER_FAMILY}'
