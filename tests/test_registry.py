"""``import mmrmt`` where only one of mmdet / mmseg can be imported registers
the backbones in the other one; with neither it is the core alone (tests/test_core_without_openmmlab.py)
and registers nothing in mmengine."""
import subprocess
import sys
import textwrap

import pytest

BLOCK_AND_IMPORT = textwrap.dedent('''
    import sys

    for name in sys.argv[1:]:  # as if not installed: importing them raises ModuleNotFoundError
        sys.modules[name] = None
    import mmrmt
    from mmrmt.models.backbones import RMT, ResMLP, ResT
''')


CHECK_REGISTERED_IN = textwrap.dedent('''
    from {present}.registry import MODELS
    assert [MODELS.get(cls.__name__) for cls in (RMT, ResT, ResMLP)] == [RMT, ResT, ResMLP]
    print('registered in {present}')
''')


def run_without(libraries, checks: str = '') -> subprocess.CompletedProcess:
    """Import mmrmt in a fresh interpreter where ``libraries`` cannot be imported."""
    return subprocess.run([sys.executable, '-c', BLOCK_AND_IMPORT + checks, *libraries],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # a fresh process (tests/test_import_layers.py is the fast tier's)
@pytest.mark.parametrize('absent,present', [('mmseg', 'mmdet'), ('mmdet', 'mmseg')])
def test_import_with_one_library_registers_in_it(absent, present):
    result = run_without([absent], CHECK_REGISTERED_IN.format(present=present))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == f'registered in {present}'


@pytest.mark.slow  # a fresh process
def test_import_with_neither_library_is_the_core_alone():
    result = run_without(['mmdet', 'mmseg'], textwrap.dedent('''
        from mmengine.registry import MODELS
        assert MODELS.get('RMT') is None and 'mmrmt.openmmlab_layer' not in sys.modules
        print('core alone')
    '''))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == 'core alone'
