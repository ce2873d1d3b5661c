"""No checkpoint loaded through mmengine keeps code for its resume to run, whatever the runner
and its hooks; and our runner brings the hook of an exact resume itself, once.

mmengine's ``Runner.resume`` runs ``meta['config']`` (``Config.fromstring``). The files here
hold, there, a line that would create a marker file if anything ran it."""
from pathlib import Path

import pytest
import torch
from mmengine.config import Config
from mmengine.registry import DefaultScope
from mmengine.runner.checkpoint import CheckpointLoader, _load_checkpoint

from mmrmt.engine import OwnWorkDirRunner, ResumeRNGHook
from mmrmt.upstream_fixes import make_resumed_configs_inert
from helpers.code_in_checkpoint import code_that_touches
from helpers.tiny_model import TinyModel


def checkpoint_with(config_text: str) -> dict:
    return dict(state_dict=TinyModel().state_dict(), meta=dict(config=config_text, iter=2))


def read_as_resume_does(checkpoint: dict) -> None:
    """What mmengine's ``Runner.resume`` does with a loaded checkpoint's ``meta['config']``."""
    if 'config' in checkpoint['meta']:
        Config.fromstring(checkpoint['meta']['config'], file_format='.py')


@pytest.fixture(autouse=True)
def scope_of_this_test_only():
    """A Runner makes its scope ('mmengine') the process's current one, and later tests would build
    from mmengine's registry instead of mmdet's / mmseg's: mmengine's own context restores the scopes."""
    with DefaultScope.overwrite_default_scope('mmengine'):
        yield


@pytest.fixture
def trap(tmp_path) -> Path:
    """The marker that the code in the checkpoints of this test would create."""
    yield tmp_path / 'PWNED'
    assert not (tmp_path / 'PWNED').exists(), "meta['config'] was run"


def test_a_local_file_loads_without_its_code(tmp_path, trap):
    path = tmp_path / 'trap.pth'
    torch.save(checkpoint_with(code_that_touches(trap) + 'gpu_ids = [0]\n'), path)
    checkpoint = _load_checkpoint(str(path), map_location='cpu')
    read_as_resume_does(checkpoint)
    assert 'config' not in checkpoint['meta'] and checkpoint['meta']['iter'] == 2


def test_plain_data_keeps_the_gpu_count_check(tmp_path):
    """What mmengine's resume reads of the text, the previous run's gpu_ids, stays."""
    path = tmp_path / 'plain.pth'
    torch.save(checkpoint_with("gpu_ids = [0, 1]\nmodel = dict(type='X')\n"), path)
    text = _load_checkpoint(str(path), map_location='cpu')['meta']['config']
    assert text == 'gpu_ids = [0, 1]\n' and Config.fromstring(text, '.py').gpu_ids == [0, 1]


def test_every_loader_is_wrapped_once():
    make_resumed_configs_inert()  # applying the fix again wraps nothing twice
    for prefix, loader in CheckpointLoader._schemes.items():
        assert getattr(loader, 'makes_resumed_config_inert', False), f'the loader of {prefix!r} is not guarded'
        assert not getattr(loader.__wrapped__, 'makes_resumed_config_inert', False), f'{prefix!r} wrapped twice'
        assert loader.__name__.startswith('load_from_')  # mmengine logs the backend by this name


@pytest.mark.parametrize('custom_hooks', [[], [dict(type='EmptyCacheHook')], [dict(type='ResumeRNGHook')]])
def test_the_runner_has_one_resume_rng_hook_whatever_the_custom_hooks(custom_hooks, tmp_path):
    runner = OwnWorkDirRunner(model=TinyModel(), work_dir=str(tmp_path / 'work'), custom_hooks=custom_hooks)
    assert sum(isinstance(hook, ResumeRNGHook) for hook in runner.hooks) == 1
    assert all(any(type(hook).__name__ == wanted['type'] for hook in runner.hooks) for wanted in custom_hooks)


def test_the_runner_guards_a_loader_registered_after_the_guard(tmp_path, trap, monkeypatch):
    """A user's module may register a loader of its own later: the runner's load_checkpoint,
    through which mmengine's resume loads, makes its checkpoints inert too."""
    monkeypatch.setattr(CheckpointLoader, '_schemes', dict(CheckpointLoader._schemes))
    CheckpointLoader.register_scheme('trap://', lambda filename, map_location=None: checkpoint_with(
        code_that_touches(trap)), force=True)
    runner = OwnWorkDirRunner(model=TinyModel(), work_dir=str(tmp_path / 'work'))
    checkpoint = runner.load_checkpoint('trap://file')
    read_as_resume_does(checkpoint)
    assert 'config' not in checkpoint['meta']


@pytest.mark.parametrize('content, reason', [
    (None, '--resume {path} does not exist'),
    (b'', '--resume {path} is not a readable PyTorch checkpoint: the file is empty (0 bytes)'),
    (b'junk\n', "--resume {path} is not a readable PyTorch checkpoint: it is neither a zip archive nor a pickle "
                "(it starts with b'junk\\n')")])
def test_a_resume_file_that_is_no_checkpoint_is_one_line_before_the_log(content, reason, tmp_path):
    """mmdet's and mmseg's launchers pass ``--resume FILE`` to the runner unchecked."""
    path = tmp_path / 'resume.pth'
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SystemExit) as exited:
        OwnWorkDirRunner(model=TinyModel(), work_dir=str(tmp_path / 'work'), load_from=str(path), resume=True)
    assert exited.value.code == f'error: {reason.format(path=path)}; give a checkpoint this run wrote'
    assert not (tmp_path / 'work').exists()


@pytest.mark.parametrize('name, content, reason', [
    ('load.pth', None, 'load_from {path} does not exist'),
    ('load.pth', b'', 'load_from {path} is not a readable PyTorch checkpoint: the file is empty (0 bytes)'),
    ('load.safetensors', b'junk\n',
     "load_from {path} is not a readable safetensors file: it has no safetensors header (it starts with b'junk\\n')")])
def test_a_load_from_that_is_no_checkpoint_is_one_line_before_the_work_dir(name, content, reason, tmp_path):
    """mmdet's and mmseg's launchers pass ``load_from`` (their test.py's CHECKPOINT) unchecked."""
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SystemExit) as exited:
        OwnWorkDirRunner(model=TinyModel(), work_dir=str(tmp_path / 'work'), load_from=str(path))
    assert exited.value.code == f'error: {reason.format(path=path)}; give the path of a checkpoint file'
    assert not (tmp_path / 'work').exists()
