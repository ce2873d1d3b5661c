"""``import mmrmt`` where only one of mmdet / mmseg can be imported registers
the backbones in the other one; with neither it is the core alone (tests/test_core_without_openmmlab.py)
and registers nothing in mmengine. A config inheriting ours finds our runner and hook by their scoped names."""
import subprocess
import sys
import textwrap
from pathlib import Path

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


#: A user's config: ours inherited, with ``custom_imports`` of its own naming mmrmt alone.
USER_CONFIG = textwrap.dedent('''
    _base_ = [{runtime!r}]
    custom_imports = dict(imports=['mmrmt'], allow_failed_imports=False)
    default_scope = {library!r}
    model = dict(type='RMT', arch='t')
    work_dir = {work_dir!r}
''')

BUILD_AS_THE_LIBRARY_TRAIN_SCRIPT = textwrap.dedent('''
    import sys
    from importlib import import_module
    from mmengine.config import Config

    cfg = Config.fromfile(sys.argv[1])
    engine_before = 'mmrmt.engine' in sys.modules
    runner = import_module(sys.argv[2] + '.registry').RUNNERS.build(cfg)
    hooks = [type(hook).__name__ for hook in runner.hooks]
    print(engine_before, type(runner).__name__, hooks.count('ResumeRNGHook'))
''')


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize('library', ['mmdet', 'mmseg'])
def test_our_runner_and_hook_are_found_with_mmrmt_alone_in_custom_imports(library, tmp_path):
    """mmdet's and mmseg's tools/train.py build ``RUNNERS.build(cfg)`` from their scope: mmrmt's scoped names
    import mmrmt.engine when first looked up, whatever list of imports a user's config sets."""
    runtime = Path(__file__).resolve().parents[1] / 'configs' / '_base_' / 'mmrmt_runtime.py'
    config = tmp_path / 'user_config.py'
    config.write_text(USER_CONFIG.format(runtime=str(runtime), library=library, work_dir=str(tmp_path / 'work')))
    result = subprocess.run([sys.executable, '-c', BUILD_AS_THE_LIBRARY_TRAIN_SCRIPT, str(config), library],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == 'False OwnWorkDirRunner 1'
