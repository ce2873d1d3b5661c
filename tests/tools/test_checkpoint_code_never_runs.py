"""No tool runs text a checkpoint holds.

Every tool that reads a checkpoint is given our own training checkpoint whose
saved config (``meta['cfg']``, and mmcv 1.x's ``meta['config']``) starts with
a line that, if anything executed it, would create a marker file. Each tool
does its job as usual (the text is never read as code), and the marker never
appears; a resume from it (mmengine's resume would run ``meta['config']``) is
refused with one line, the same through our train.py and mmdet's. The model
converters, which read the saved config for the backbone's arch, have their
cases in test_model_converters.py and test_upstream_trained.py.

A checkpoint carrying a pickle payload is refused by every path mmengine loads
through (``load_from``, ``init_cfg``, ``--resume``; mmdet's and mmseg's own train.py
and test.py too; ``load_checkpoint`` in a user's script: tests/test_upstream_fixes.py) in
one line, on upstream mmengine and on onedl-mmengine alike (make test-forks), and the
payload never runs.
"""
from pathlib import Path
from typing import Tuple

import pytest
import torch

from mmrmt.checkpoint import REFUSAL_ADVICE
from helpers.code_in_checkpoint import save_pickle_payload, with_code_in_saved_config
from tool_process import (DET_CONFIG, MMSEG_TOOLS_READ_OUR_CONFIGS, SEG_CONFIG, assert_mmseg_tools_stop, check_ok,
                          det_data_options, exit_message, library_train_script, load_checkpoint, run_script, run_tool,
                          seg_data_options)


@pytest.fixture
def trap(det_work_dir, tmp_path) -> Tuple[Path, Path]:
    """(a copy of the 4-iteration detection checkpoint with code in its saved config, the marker)."""
    marker, path = tmp_path / 'PWNED', tmp_path / 'trap.pth'
    torch.save(with_code_in_saved_config(load_checkpoint(det_work_dir / 'iter_4.pth'), marker), path)
    return path, marker


def test_train_resume_refuses_a_file_whose_resume_would_run_code(trap, demo_root, tmp_path, monkeypatch, capsys):
    """mmengine's Runner.resume runs ``meta['config']``: such a file is refused in preflight."""
    checkpoint, marker = trap
    message = exit_message('train.py', [DET_CONFIG, '--work-dir', tmp_path / 'work', '--resume', checkpoint,
                                        '--cfg-options', 'train_cfg.val_interval=100', *det_data_options(demo_root)],
                           monkeypatch, capsys)
    assert message.startswith(f'error: --resume the config saved in {checkpoint} (meta.config) is '
                              'not plain data, so it was not read (nor run): line 1: ')
    assert not (tmp_path / 'work').exists() and not marker.exists()


def test_mmdet_train_script_refuses_it_with_our_line(trap, demo_root, tmp_path, monkeypatch, capsys):
    """mmdet's own train.py on our config: the runner the config names is the same gate, so the same line ends it
    before the work dir exists, and ``meta['config']`` never runs."""
    checkpoint, marker = trap
    arguments = [DET_CONFIG, '--work-dir', tmp_path / 'work', '--resume', checkpoint, '--cfg-options',
                 'train_cfg.val_interval=100', *det_data_options(demo_root)]
    result = run_script(library_train_script('mmdet'), arguments)
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == exit_message('train.py', arguments, monkeypatch, capsys)
    assert not (tmp_path / 'work').exists() and not marker.exists()


@pytest.mark.parametrize('tool,args,written', [
    ('test.py', ['{det}', '{ckpt}', '--work-dir', '{tmp}/work', '--cfg-options', '{data}'], 'work'),
    ('../demo/image_demo.py', ['{image}', '{det}', '--weights', '{ckpt}', '--out-dir', '{tmp}/out', '--device', 'cpu'],
     'out/preds/val_0000.json'),
    ('deployment/pytorch2onnx.py', ['{det}', '--weights', '{ckpt}', '--shape', '64', '64', '--backbone-only', '--out',
                                    '{tmp}/backbone.onnx'], 'backbone.onnx'),
    ('analysis_tools/visualize_decay.py', ['{det}', '--image', '{image}', '--weights', '{ckpt}', '--out',
                                           '{tmp}/decay.png'], 'decay.png'),
])
def test_tools_read_the_checkpoint_and_never_run_its_config(tool, args, written, trap, demo_root, tmp_path):
    checkpoint, marker = trap
    names = dict(det=DET_CONFIG, ckpt=checkpoint, tmp=tmp_path, image=demo_root / 'coco' / 'val' / 'val_0000.jpg')
    filled = [option for arg in args for option in (
        det_data_options(demo_root) if arg == '{data}' else [arg.format(**names)])]
    check_ok(run_tool([tool, *filled]))
    assert (tmp_path / written).exists() and not marker.exists()


@pytest.fixture
def pickled_code(tmp_path) -> Tuple[Path, Path]:
    """(a checkpoint whose unpickling without weights-only safety creates the marker, the marker)."""
    marker = tmp_path / 'PWNED'
    return save_pickle_payload(tmp_path / 'pickled_code.pth', marker), marker


def assert_library_refused(library: str, result, checkpoint: Path, marker: Path) -> None:
    """The payload never ran, and mmdet's or mmseg's own tool ended with status 1 in a traceback of
    CheckpointRefusedError whose last line names the file, the reason and the fix; mmseg's, where it cannot
    read our configs (the forks: ``MMSEG_TOOLS_READ_OUR_CONFIGS``), stopped at the config, before reading
    any checkpoint."""
    assert not marker.exists(), 'the pickle payload ran'
    if library == 'mmseg' and not MMSEG_TOOLS_READ_OUR_CONFIGS:
        return assert_mmseg_tools_stop(result)
    assert result.returncode == 1, result.stderr[-3000:]
    error, _, message = result.stderr.strip().splitlines()[-1].partition(': ')
    assert error == 'mmrmt.checkpoint.weights_only.CheckpointRefusedError'
    assert message.startswith(f'checkpoint {checkpoint} holds Python objects besides weights (UnpicklingError: ')
    assert message.endswith(f'so it was not loaded and none of its code ran: {REFUSAL_ADVICE}')
    assert 'weights_only' not in message.replace(str(checkpoint), '')  # not torch's advice to turn the safety off


#: mmdet's and mmseg's own tools given a checkpoint: (library, script, how the checkpoint is given).
LIBRARY_READS = [(library, 'train.py', how) for library in ('mmdet', 'mmseg') for how in ('load_from', 'init_cfg')] + [
    ('mmdet', 'train.py', '--resume'), ('mmdet', 'test.py', 'CHECKPOINT'), ('mmseg', 'test.py', 'CHECKPOINT')]


@pytest.mark.parametrize('library,script,how', LIBRARY_READS)
def test_library_tools_refuse_a_pickle_payload(library, script, how, pickled_code, demo_root, tmp_path):
    """mmdet's and mmseg's own train.py, the checkpoint given as ``load_from``, as the model's
    ``init_cfg=dict(type='Pretrained')`` (mmengine's PretrainedInit) or to ``--resume``, and their test.py."""
    checkpoint, marker = pickled_code
    config, data_options = (DET_CONFIG, det_data_options) if library == 'mmdet' else (SEG_CONFIG, seg_data_options)
    given = {'load_from': ([], [f'load_from={checkpoint}']), '--resume': (['--resume', checkpoint], []),
             'init_cfg': ([], ['model.init_cfg.type=Pretrained', f'model.init_cfg.checkpoint={checkpoint}']),
             'CHECKPOINT': ([checkpoint], [])}
    before, settings = given[how]
    result = run_script(library_train_script(library).with_name(script), [
        config, *before, '--work-dir', tmp_path / 'work', '--cfg-options', *settings, *data_options(demo_root)])
    assert_library_refused(library, result, checkpoint, marker)
    if how != 'init_cfg':  # read before the runner makes anything (init_cfg's file is read at training)
        assert not (tmp_path / 'work').exists()


@pytest.mark.parametrize('tool', ['train.py', 'test.py'])
def test_our_tools_refuse_a_pickle_payload_before_the_run(tool, pickled_code, demo_root, tmp_path):
    """Our launchers check the file first: one line, no work dir."""
    checkpoint, marker = pickled_code
    arguments = ([DET_CONFIG, '--cfg-options', f'load_from={checkpoint}'] if tool == 'train.py'
                 else [DET_CONFIG, checkpoint, '--cfg-options'])
    result = run_tool([tool, *arguments, *det_data_options(demo_root), 'work_dir=' + str(tmp_path / 'work')])
    assert not marker.exists() and not (tmp_path / 'work').exists()
    assert result.returncode != 0 and 'Traceback' not in result.stderr, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert str(checkpoint) in last and 'weights_only' not in last.replace(str(checkpoint), '')


def test_mmdet_test_script_refuses_an_empty_checkpoint_before_the_work_dir(demo_root, tmp_path):
    """A file that is no checkpoint, given to mmdet's own test.py: one line, nothing written."""
    checkpoint = tmp_path / 'empty.pth'
    checkpoint.write_bytes(b'')
    script = library_train_script('mmdet').with_name('test.py')
    result = run_script(script, [DET_CONFIG, checkpoint, '--work-dir', tmp_path / 'work', '--cfg-options',
                                 *det_data_options(demo_root)])
    assert result.returncode == 1, result.stderr[-3000:]
    expected = (f'error: load_from {checkpoint} is not a readable PyTorch checkpoint: the file is empty (0 bytes); '
                'give the path of a checkpoint file')
    assert result.stderr.strip().splitlines()[-1] == expected
    assert not (tmp_path / 'work').exists()
