"""mmdet's and mmseg's own tools/train.py, given our configs and nothing else, keep our guarantees (their
resumes beside ours: test_resume.py): an unknown compile option is one line before the work dir; a user's
config that inherits ours and replaces the lists a hook could hang on (``custom_hooks``, ``default_hooks``)
resumes as exactly, and the resumed checkpoint's code never runs."""
import shutil
from pathlib import Path

import pytest
import torch

from helpers.code_in_checkpoint import with_code_in_saved_config
from tool_process import (DET_CONFIG, LIBRARIES, check_ok, det_data_options, library_train_script, load_checkpoint,
                          run_script)


@pytest.mark.parametrize('library,config,data_options,trained', LIBRARIES)
def test_library_train_script_refuses_an_unknown_compile_option_before_the_work_dir(
        library, config, data_options, trained, demo_root, tmp_path):
    work_dir = tmp_path / 'work'
    result = run_script(library_train_script(library), [
        config, '--work-dir', work_dir, '--cfg-options', 'compile.options.freezin=True', *data_options(demo_root)])
    assert result.returncode == 1
    assert 'Traceback' not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: compile.options.freezin: torch {torch.__version__} Inductor has no option 'freezin'; "
        'did you mean freezing?')
    assert not work_dir.exists()


#: What a user's config inheriting ours sets, replacing the lists of the bases
#: (mmengine replaces lists, and ``_delete_`` replaces a dict).
USER_SETTINGS = {
    'custom_hooks': "custom_hooks = [dict(type='EmptyCacheHook')]\n",
    'default_hooks': ("default_hooks = dict(_delete_=True, logger=dict(type='LoggerHook', interval=1),\n"
                      "                     checkpoint=dict(type='CheckpointHook', interval=2, by_epoch=False))\n"
                      'custom_hooks = []\n'),
    'runner_type': "runner_type = 'Runner'\ncustom_hooks = [dict(type='EmptyCacheHook')]\n",
}


def user_config(config: Path, settings: str, folder: Path) -> Path:
    """A user's config file: ``config`` as its base, then ``settings`` (a key of USER_SETTINGS)."""
    path = folder / f'user_{settings}.py'
    path.write_text(f'_base_ = [{str(config)!r}]\n{USER_SETTINGS[settings]}')
    return path


def trapped_resume(script: Path, config: Path, options: list, work_dir: Path):
    """Train ``config`` 2 iterations with ``script``, put code that touches a marker in the saved
    configs of the checkpoint ``last_checkpoint`` names (the file mmengine's resume would run),
    resume to the config's 4 iterations; return the resumed run and the marker."""
    check_ok(run_script(script, [config, '--work-dir', work_dir, '--cfg-options', 'train_cfg.max_iters=2',
                                 *options]))
    last, marker = work_dir / 'iter_2.pth', work_dir.parent / 'PWNED'
    torch.save(with_code_in_saved_config(load_checkpoint(last), marker), last)
    return run_script(script, [config, '--work-dir', work_dir, '--resume', '--cfg-options', *options]), marker


@pytest.mark.parametrize('settings', ['custom_hooks', 'default_hooks'])
@pytest.mark.parametrize('library,config,data_options,trained', LIBRARIES)
def test_user_config_replacing_hook_lists_resumes_exactly_without_running_code(
        library, config, data_options, trained, settings, demo_root, tmp_path, request):
    """The runner of our configs guards the resume itself: the checkpoint's ``meta['config']``
    is never run, and the random state is restored (the weights of the straight run of our
    tools/train.py on the base config; the replaced hooks do not change the training)."""
    options = ['train_cfg.val_interval=100', *data_options(demo_root)]
    resumed, marker = trapped_resume(library_train_script(library), user_config(config, settings, tmp_path),
                                     options, tmp_path / 'work')
    check_ok(resumed)
    assert 'resumed epoch: 0, iter: 2' in resumed.stdout + resumed.stderr
    assert not marker.exists(), "the resume ran the checkpoint's meta['config']"
    expected = load_checkpoint(request.getfixturevalue(trained) / 'iter_4.pth')['state_dict']
    continued = load_checkpoint(tmp_path / 'work' / 'iter_4.pth')['state_dict']
    assert expected.keys() == continued.keys()
    differing = [key for key, value in expected.items() if not torch.equal(value, continued[key])]
    assert not differing, f'{len(differing)} of {len(expected)} tensors differ, e.g. {differing[:3]}'


def test_user_config_replacing_the_runner_still_runs_no_code(demo_root, tmp_path):
    """With mmengine's plain Runner and no ResumeRNGHook, the load path's guard (installed by the
    ``import mmrmt`` of our configs) still keeps ``meta['config']`` from being run. (The
    resume is then not exact: only our runner or the hook restore the random state.)"""
    options = ['train_cfg.val_interval=100', *det_data_options(demo_root)]
    resumed, marker = trapped_resume(library_train_script('mmdet'), user_config(DET_CONFIG, 'runner_type', tmp_path),
                                     options, tmp_path / 'work')
    check_ok(resumed)
    assert 'resumed epoch: 0, iter: 2' in resumed.stdout + resumed.stderr
    assert not marker.exists(), "the resume ran the checkpoint's meta['config']"
    assert (tmp_path / 'work' / 'iter_4.pth').is_file()


@pytest.mark.parametrize('library,config,data_options,trained', LIBRARIES)
def test_library_train_script_never_trains_over_an_earlier_run(library, config, data_options, trained, demo_root,
                                                               tmp_path, request):
    """Run twice into one work dir without --resume, mmdet's and mmseg's own train.py would write the second
    run's checkpoints over the first's: the runner of our configs refuses in one line, the files untouched."""
    work_dir = tmp_path / 'work'
    shutil.copytree(request.getfixturevalue(trained), work_dir)
    finished = {path: path.read_bytes() for path in work_dir.iterdir() if path.is_file()}
    result = run_script(library_train_script(library), [config, '--work-dir', work_dir, '--cfg-options',
                                                        'train_cfg.val_interval=100', *data_options(demo_root)])
    assert result.returncode == 1
    assert 'Traceback' not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f'error: work dir {work_dir} holds an earlier run ({work_dir}/last_checkpoint), which this run would '
        'overwrite: add --resume to continue it, or choose another --work-dir')
    assert {path: path.read_bytes() for path in finished} == finished
