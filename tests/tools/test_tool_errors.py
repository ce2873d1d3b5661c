"""Wrong paths, bad checkpoints and broken configs fail fast, before the run
starts, with one line naming them.

One case runs the tool in a subprocess (the line is all the user sees); the
others run the tool's main() in this process, which is the same code path
without paying a fresh interpreter each time.
"""
import pytest
import torch

from tool_process import (DET_CONFIG, SEG_CONFIG, assert_fails_with, check_ok, det_data_options, exit_message,
                          load_checkpoint, run_tool)


def test_missing_config_in_a_subprocess(tmp_path):
    result = run_tool(['train.py', 'configs/demo/no_such_config.py', '--work-dir', tmp_path / 'work'],
                      fresh=True)
    assert_fails_with(result, 'error: config file not found: configs/demo/no_such_config.py',
                      tmp_path / 'work')


def test_test_tool_missing_config(tmp_path, monkeypatch, capsys):
    message = exit_message('test.py', ['no_such_config.py', 'x.pth', '--work-dir', tmp_path / 'w'],
                           monkeypatch, capsys)
    assert message == 'error: config file not found: no_such_config.py'
    assert not (tmp_path / 'w').exists()


def test_missing_data_root(tmp_path, monkeypatch, capsys):
    missing = tmp_path / 'no_data'
    message = exit_message('train.py', [SEG_CONFIG, '--work-dir', tmp_path / 'w', '--cfg-options',
                                        f'train_dataloader.dataset.data_root={missing}'],
                           monkeypatch, capsys)
    assert message.startswith(f'error: data root of train_dataloader not found: {missing} ')
    assert 'make_demo_data.py' in message
    assert not (tmp_path / 'w').exists()


def test_missing_annotation_file(det_work_dir, demo_root, tmp_path, monkeypatch, capsys):
    checkpoint = det_work_dir / 'iter_4.pth'  # fits the model, so the data check is what fails
    message = exit_message('test.py', [DET_CONFIG, checkpoint, '--work-dir', tmp_path / 'w',
                                       '--cfg-options',
                                       f'test_dataloader.dataset.data_root={demo_root}/coco/',
                                       'test_dataloader.dataset.ann_file=missing.json'],
                           monkeypatch, capsys)
    assert message.startswith('error: annotation file of test_dataloader not found: '
                              f'{demo_root}/coco/missing.json ')


@pytest.mark.parametrize('tool,args,expected', [
    ('train.py', ['--resume', 'missing.pth'], 'error: --resume checkpoint not found: missing.pth'),
    ('train.py', ['--cfg-options', 'load_from=missing.pth'],
     'error: load_from checkpoint not found: missing.pth'),
    ('test.py', [], 'error: checkpoint not found: missing.pth'),
])
def test_missing_checkpoint(tool, args, expected, tmp_path, monkeypatch, capsys):
    positional = [DET_CONFIG, 'missing.pth'] if tool == 'test.py' else [DET_CONFIG]
    message = exit_message(tool, [*positional, '--work-dir', tmp_path / 'w', *args],
                           monkeypatch, capsys)
    assert message == expected
    assert not (tmp_path / 'w').exists()


@pytest.fixture(scope='module')
def bad_checkpoints(det_work_dir, tmp_path_factory):
    """Files that are not usable checkpoints, as users meet them."""
    folder = tmp_path_factory.mktemp('bad_checkpoints')
    (folder / 'empty.pth').touch()
    whole = (det_work_dir / 'iter_4.pth').read_bytes()
    (folder / 'truncated.pth').write_bytes(whole[:len(whole) // 2])
    (folder / 'notes.pth').write_text('weights are on the shared drive\n')
    trained = load_checkpoint(det_work_dir / 'iter_4.pth')
    torch.save({'state_dict': {key[len('backbone.'):]: value
                               for key, value in trained['state_dict'].items()
                               if key.startswith('backbone.')}}, folder / 'backbone.pth')
    trained['state_dict']['roi_head.bbox_head.fc_cls.weight'] = torch.zeros(11, 32)
    torch.save(trained, folder / 'ten_classes.pth')
    return folder


UNREADABLE = 'is not a readable PyTorch checkpoint: '


@pytest.mark.parametrize('name,reason', [
    ('empty.pth', 'the file is empty (0 bytes)'),
    ('truncated.pth', 'the file is truncated or corrupted (its zip directory is missing)'),
    ('notes.pth', "it is neither a zip archive nor a pickle (it starts with b'weights are on t')"),
])
@pytest.mark.parametrize('tool,role', [
    ('test.py', 'checkpoint'),
    ('train.py', '--resume checkpoint'),
    ('train.py', 'load_from checkpoint'),
])
def test_unreadable_checkpoint(name, reason, tool, role, bad_checkpoints, tmp_path, monkeypatch,
                               capsys):
    path = bad_checkpoints / name
    given = {'checkpoint': [path], '--resume checkpoint': ['--resume', path],
             'load_from checkpoint': ['--cfg-options', f'load_from={path}']}[role]
    positional = [DET_CONFIG, *given] if tool == 'test.py' else [DET_CONFIG]
    extra = [] if tool == 'test.py' else given
    message = exit_message(tool, [*positional, '--work-dir', tmp_path / 'w', *extra],
                           monkeypatch, capsys)
    assert message == f'error: {role} {path} {UNREADABLE}{reason}'
    assert not (tmp_path / 'w').exists()


def test_backbone_file_cannot_be_resumed(bad_checkpoints, tmp_path, monkeypatch, capsys):
    path = bad_checkpoints / 'backbone.pth'
    message = exit_message('train.py', [DET_CONFIG, '--work-dir', tmp_path / 'w', '--resume', path],
                           monkeypatch, capsys)
    assert message == (f'error: --resume checkpoint {path} is not a training checkpoint (it has '
                       'no message_hub, meta.epoch, meta.iter): resume from a file tools/train.py '
                       f'wrote, or start from these weights with --cfg-options load_from={path}')


def test_resume_without_a_checkpoint_in_the_work_dir(tmp_path, monkeypatch, capsys):
    (tmp_path / 'w').mkdir()
    message = exit_message('train.py', [DET_CONFIG, '--work-dir', tmp_path / 'w', '--resume'],
                           monkeypatch, capsys)
    assert message == (f'error: --resume found no checkpoint to resume from in {tmp_path / "w"} '
                       '(no last_checkpoint file); name one with --resume CKPT, or train from '
                       'scratch without --resume')


def test_checkpoint_of_another_model_is_refused_before_testing(bad_checkpoints, tmp_path,
                                                               monkeypatch, capsys):
    path = bad_checkpoints / 'backbone.pth'
    message = exit_message('test.py', [DET_CONFIG, path, '--work-dir', tmp_path / 'w'],
                           monkeypatch, capsys)
    assert message.startswith(f'error: checkpoint {path} does not fit the model of {DET_CONFIG}: ')
    assert '153 unexpected keys (extra_norms.0.bias, ' in message
    assert '189 missing keys (backbone.extra_norms.0.bias, ' in message
    assert message.endswith('add --allow-partial-load')
    assert not (tmp_path / 'w').exists()


def test_reshaped_weights_are_refused_unless_partial_load_is_allowed(bad_checkpoints, demo_root,
                                                                     tmp_path, monkeypatch, capsys):
    path = bad_checkpoints / 'ten_classes.pth'
    args = [DET_CONFIG, '--work-dir', tmp_path / 'w', '--cfg-options', 'train_cfg.max_iters=1',
            'train_cfg.val_interval=100', f'load_from={path}', *det_data_options(demo_root)]
    message = exit_message('train.py', args, monkeypatch, capsys)
    assert message.startswith(
        f'error: load_from checkpoint {path} does not fit the model of {DET_CONFIG}: 1 tensors '
        'differ in shape (roi_head.bbox_head.fc_cls.weight: file (11, 32) vs model (4, 32)). ')
    check_ok(run_tool(['train.py', *args, '--allow-partial-load']))
    assert (tmp_path / 'w' / 'iter_1.pth').is_file()


@pytest.mark.parametrize('option', ['--out', '--work-dir'])
def test_unwritable_output_fails_in_preflight(option, det_work_dir, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / 'a_file'
    blocker.write_text('')
    target = blocker / ('preds.pkl' if option == '--out' else 'work')
    args = [DET_CONFIG, det_work_dir / 'iter_4.pth', '--work-dir', tmp_path / 'w', option, target]
    message = exit_message('test.py', args, monkeypatch, capsys)
    assert message == f'error: {option} {target} cannot be created: {blocker} is a file, not a folder'
    assert not (tmp_path / 'w').exists()


def test_config_syntax_error_names_the_file(tmp_path, monkeypatch, capsys):
    broken = tmp_path / 'broken_base.py'
    broken.write_text('model = dict(\n    type="RMT",\n')
    (tmp_path / 'child.py').write_text("_base_ = ['./broken_base.py']\n")
    message = exit_message('train.py', [tmp_path / 'child.py', '--work-dir', tmp_path / 'w'],
                           monkeypatch, capsys)
    assert message == f"error: syntax error in config {broken}, line 1: '(' was never closed"


@pytest.mark.parametrize('bases', [{'child.py': 'child.py'}, {'child.py': 'middle.py', 'middle.py': 'child.py'}])
def test_circular_bases_are_named(bases, tmp_path, monkeypatch, capsys):
    for name, base in bases.items():
        (tmp_path / name).write_text(f"_base_ = ['./{base}']\nx = 1\n")
    chain = ' -> '.join(str(tmp_path / name) for name in [*bases, 'child.py'])
    message = exit_message('train.py', [tmp_path / 'child.py', '--work-dir', tmp_path / 'w'], monkeypatch, capsys)
    assert message == (f'error: config {tmp_path / "child.py"}: its _base_ files are circular ({chain}); remove '
                       f'the _base_ entry of {tmp_path / list(bases)[-1]} that names {tmp_path / "child.py"}')
    assert not (tmp_path / 'w').exists()


def test_unreadable_pretrained_backbone_file_fails_before_training(bad_checkpoints, tmp_path,
                                                                   monkeypatch, capsys):
    path = bad_checkpoints / 'truncated.pth'
    config = tmp_path / 'pretrained.py'
    config.write_text(f"_base_ = ['{DET_CONFIG}']\n"
                      f"model = dict(backbone=dict(init_cfg=dict(type='Pretrained', "
                      f"checkpoint='{path}')))\n")
    message = exit_message('train.py', [config, '--work-dir', tmp_path / 'w'], monkeypatch, capsys)
    assert message == (f'error: model.backbone.init_cfg checkpoint {path} {UNREADABLE}the file is '
                       'truncated or corrupted (its zip directory is missing)')
    assert not (tmp_path / 'w').exists()


def test_existing_out_file_needs_force(det_work_dir, tmp_path, monkeypatch, capsys):
    out = tmp_path / 'preds.pkl'
    out.write_bytes(b'earlier predictions')
    message = exit_message('test.py', [DET_CONFIG, det_work_dir / 'iter_4.pth', '--out', out,
                                       '--work-dir', tmp_path / 'w'], monkeypatch, capsys)
    assert message == f'error: --out {out} exists; choose another path, or add --force to replace it'
    assert out.read_bytes() == b'earlier predictions'


def test_demo_data_root_that_is_a_file(tmp_path, monkeypatch, capsys):
    root = tmp_path / 'demo'
    root.write_text('not a folder')
    message = exit_message('misc/make_demo_data.py', ['--root', root], monkeypatch, capsys)
    assert message == f'error: --root {root} is a file, not a folder: give a folder for coco/ and ade/'
    assert root.read_text() == 'not a folder'


def test_demo_data_root_holding_a_real_dataset(tmp_path, monkeypatch, capsys):
    images = tmp_path / 'coco' / 'val2017'
    images.mkdir(parents=True)
    (images / '000001.jpg').write_bytes(b'a photo')
    message = exit_message('misc/make_demo_data.py', ['--root', tmp_path], monkeypatch, capsys)
    assert message == (f'error: --root {tmp_path}: {tmp_path / "coco"} already holds files that are not the demo '
                       'data (a dataset of yours?), which drawing it would overwrite: give a new or empty folder')
    assert sorted(path.name for path in tmp_path.rglob('*')) == ['000001.jpg', 'coco', 'val2017']
