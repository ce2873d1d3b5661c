"""mmdet's and mmseg's own tools/train.py, given our configs and nothing else,
keep our guarantees: --resume loads under torch's weights-only unpickler, and
a run stopped after 2 iterations and resumed to 4 ends with exactly the
weights of a straight 4-iteration run (the ResumeRNGHook the configs name);
and --resume in a copied work dir reads the copy's checkpoints only (the
OwnWorkDirRunner the configs name)."""
import pytest
import torch
from tool_process import (DET_CONFIG, SEG_CONFIG, check_ok, copy_without, det_data_options,
                          files_under, foreign_checkpoint_error, library_train_script,
                          load_checkpoint, run_script, seg_data_options)


@pytest.mark.parametrize('library,config,data_options,trained', [
    ('mmdet', DET_CONFIG, det_data_options, 'det_work_dir'),
    ('mmseg', SEG_CONFIG, seg_data_options, 'seg_work_dir'),
])
def test_library_train_script_resumes_to_the_uninterrupted_weights(library, config, data_options, trained,
                                                                   demo_root, tmp_path, request):
    """The straight run is the shared 4-iteration run of our tools/train.py on the
    same config and options: the library's script, interrupted and resumed,
    must end with exactly its weights (the same training, whichever script)."""
    script, straight = library_train_script(library), request.getfixturevalue(trained)
    options = ['train_cfg.val_interval=100', *data_options(demo_root)]
    interrupted = tmp_path / 'interrupted'
    check_ok(run_script(script, [config, '--work-dir', interrupted, '--cfg-options',
                                 'train_cfg.max_iters=2', *options]))
    assert not (interrupted / 'iter_4.pth').exists()
    resumed = run_script(script, [config, '--work-dir', interrupted, '--resume', '--cfg-options',
                                  *options])
    check_ok(resumed)
    assert 'resumed epoch: 0, iter: 2' in resumed.stdout + resumed.stderr

    expected, continued = (load_checkpoint(run / 'iter_4.pth')['state_dict']
                            for run in (straight, interrupted))
    assert expected.keys() == continued.keys()
    differing = [key for key, value in expected.items() if not torch.equal(value, continued[key])]
    assert not differing, f'{len(differing)} of {len(expected)} tensors differ, e.g. {differing[:3]}'


def test_library_train_script_resumes_a_copied_work_dir_from_the_copy(det_work_dir, demo_root,
                                                                      tmp_path):
    copy = copy_without(det_work_dir, tmp_path / 'copy')
    result = run_script(library_train_script('mmdet'), [
        DET_CONFIG, '--work-dir', copy, '--resume', '--cfg-options', 'train_cfg.val_interval=100',
        *det_data_options(demo_root)])
    check_ok(result)
    output = result.stdout + result.stderr
    assert f'resuming from {copy}/iter_4.pth instead' in output
    assert f'Load checkpoint from {copy}/iter_4.pth' in output
    assert f'Load checkpoint from {det_work_dir}' not in output


@pytest.mark.parametrize('library,config,data_options,trained', [
    ('mmdet', DET_CONFIG, det_data_options, 'det_work_dir'),
    ('mmseg', SEG_CONFIG, seg_data_options, 'seg_work_dir'),
])
def test_library_train_script_refuses_a_copy_without_the_last_checkpoint(
        library, config, data_options, trained, demo_root, tmp_path, request):
    original = request.getfixturevalue(trained)
    copy = copy_without(original, tmp_path / 'copy', removed=['iter_4.pth'])
    before = files_under(copy)
    result = run_script(library_train_script(library), [
        config, '--work-dir', copy, '--resume', '--cfg-options', *data_options(demo_root)])
    assert result.returncode == 1
    assert 'Traceback' not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == foreign_checkpoint_error(copy, original)
    assert files_under(copy) == before  # refused before the runner wrote anything
