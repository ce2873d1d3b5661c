"""The checkpoint a run loads (tools/test.py's CHECKPOINT, load_from, --resume, a Pretrained init_cfg),
checked before the run: each problem one line naming the file's role, the file and the fix. (That a tool ends
with such a line and writes nothing is tests/tools/test_bad_inputs_probe.py's, one row a tool.)"""
import pytest
import torch
from mmengine.config import Config

from mmrmt.checkpoint import CheckpointRefusedError
from mmrmt.engine import OwnWorkDirRunner
from mmrmt.utils import (PreflightError, build_cpu_model, check_run_checkpoint, config_model_specs, read_config,
                         read_run_checkpoint)
from helpers.tiny_configs import DET_CONFIG
from helpers.tiny_model import TinyModel
from helpers.tool_modules import import_tool

UNREADABLE = 'is not a readable PyTorch checkpoint: '
ROLES = ['checkpoint', '--resume', 'load_from']
#: The fix each line ends with, to resume from the file or not.
FIX = {True: 'give a checkpoint this run wrote', False: 'give the path of a checkpoint file'}


def refusal(check, *args, **kwargs) -> str:
    with pytest.raises(PreflightError) as error:
        check(*args, **kwargs)
    assert '\n' not in str(error.value)
    return str(error.value)


@pytest.fixture(scope='module')
def detector():
    """The test detector's config, and the state dict of its model (built once)."""
    cfg = read_config(str(DET_CONFIG))
    return cfg, build_cpu_model(cfg.copy()).state_dict()


@pytest.mark.parametrize('role', ROLES)
@pytest.mark.parametrize('name,reason', [
    ('empty.pth', 'the file is empty (0 bytes)'),
    ('truncated.pth', 'the file is truncated or corrupted (its zip directory is missing)'),
    ('notes.pth', "it is neither a zip archive nor a pickle (it starts with b'weights are on t')"),
])
def test_an_unreadable_file_is_named_with_its_role(name, reason, role, tmp_path):
    torch.save({'state_dict': {'w': torch.zeros(64)}}, tmp_path / 'whole.pth')
    whole = (tmp_path / 'whole.pth').read_bytes()
    contents = {'empty.pth': b'', 'truncated.pth': whole[:len(whole) // 2],
                'notes.pth': b'weights are on the shared drive\n'}
    path = tmp_path / name
    path.write_bytes(contents[name])
    resume = role == '--resume'
    assert refusal(read_run_checkpoint, str(path), role, resume=resume) == (
        f'{role} {path} {UNREADABLE}{reason}; {FIX[resume]}')


@pytest.mark.parametrize('role', ROLES)
def test_a_missing_file_is_named_with_its_role(role):
    assert refusal(read_run_checkpoint, 'missing.pth', role) == f'{role} missing.pth does not exist; {FIX[False]}'


def test_a_url_nothing_answers_is_one_line():
    url = 'http://127.0.0.1:9/checkpoint.pth'  # port 9, discard: refused at once, also offline
    line = refusal(read_run_checkpoint, url, 'load_from')
    assert line.startswith(f'load_from {url} could not be fetched (URLError: ')  # urllib's own line
    assert line.endswith('download it yourself and give the file\'s path')


def test_a_backbone_file_cannot_be_resumed(tmp_path):
    path = tmp_path / 'backbone.pth'
    torch.save({'state_dict': {'patch_embed.proj.0.weight': torch.zeros(1)}}, path)
    assert read_run_checkpoint(str(path), 'load_from')  # as weights it is read
    assert refusal(read_run_checkpoint, str(path), '--resume', resume=True) == (
        f'--resume {path} is not a training checkpoint (it has no message_hub, meta.epoch, meta.iter); '
        f'resume from a file tools/train.py wrote, or start from these weights with --cfg-options load_from={path}')


def test_resume_without_a_checkpoint_in_the_work_dir(tmp_path):
    set_start_checkpoint = import_tool('tools/train.py').set_start_checkpoint
    assert refusal(set_start_checkpoint, Config(dict(work_dir=str(tmp_path))), 'auto') == (
        f'--resume found no checkpoint to resume from in {tmp_path} (no last_checkpoint file); name one with '
        '--resume CKPT, or train from scratch without --resume')


def test_a_checkpoint_of_another_model_is_refused(detector, tmp_path):
    cfg, state = detector
    path = tmp_path / 'backbone.pth'
    torch.save({'state_dict': {key[len('backbone.'):]: value for key, value in state.items()
                               if key.startswith('backbone.')}}, path)
    message = refusal(check_run_checkpoint, cfg, config_model_specs(cfg), str(path), 'checkpoint')
    assert message.startswith(f'checkpoint {path} does not fit the model of {DET_CONFIG}: ')
    assert '153 unexpected keys (extra_norms.0.bias, ' in message
    assert '189 missing keys (backbone.extra_norms.0.bias, ' in message
    assert message.endswith('add --allow-partial-load')


def test_reshaped_weights_are_refused_unless_partial_load_is_allowed(detector, tmp_path):
    cfg, state = detector
    path = tmp_path / 'ten_classes.pth'
    torch.save({'state_dict': dict(state, **{'roi_head.bbox_head.fc_cls.weight': torch.zeros(11, 32)})}, path)
    specs = config_model_specs(cfg)
    assert refusal(check_run_checkpoint, cfg, specs, str(path), 'load_from').startswith(
        f'load_from {path} does not fit the model of {DET_CONFIG}: 1 tensors differ in shape '
        '(roi_head.bbox_head.fc_cls.weight: file (11, 32) vs model (4, 32)). ')
    check_run_checkpoint(cfg, specs, str(path), 'load_from', allow_partial=True)


def test_an_unreadable_pretrained_backbone_file(tmp_path):
    path = tmp_path / 'truncated.pth'
    torch.save({'state_dict': {'w': torch.zeros(64)}}, path)
    path.write_bytes(path.read_bytes()[:100])
    cfg = Config(dict(model=dict(backbone=dict(init_cfg=dict(type='Pretrained', checkpoint=str(path))))))
    assert refusal(import_tool('tools/train.py').check_pretrained_checkpoints, cfg.model) == (
        f'model.backbone.init_cfg.checkpoint {path} {UNREADABLE}the file is truncated or corrupted (its zip '
        f'directory is missing); {FIX[False]}')


WEIGHTS = {'linear.weight': torch.zeros(1, 2), 'linear.bias': torch.zeros(1)}
#: A file of each kind of failure: its contents (None: no file), the problem the line names after the file, and the
#: fix it ends with (None: :data:`FIX`).
FAILURES = {
    'missing': (None, 'does not exist', None),
    'empty': (b'', 'is not a readable PyTorch checkpoint: the file is empty (0 bytes)', None),
    'pickled code': ({'state_dict': WEIGHTS, 'hook': print}, 'holds Python objects besides weights (',
                     'none of its code ran: re-save'),
    'no weights': ({'state_dict': {}}, 'is not a model checkpoint: no weights', None),
    'code in meta.config': ({'state_dict': WEIGHTS, 'meta': {'config': 'import os', 'epoch': 1, 'iter': 1},
                             'message_hub': {}}, '(meta.config) is not plain data, so it was not read (nor run): ',
                            'use a checkpoint from a source you trust'),
    'no training state': ({'state_dict': WEIGHTS}, 'is not a training checkpoint (it has no message_hub, ',
                          'or start from these weights with --cfg-options load_from='),
}
#: The failures of a file to resume from only: a file to load weights from need not be a training checkpoint.
RESUME_ONLY = ('code in meta.config', 'no training state')


def line_of(launch) -> str:
    """The ``error:`` line a launch ends with: the runner's ``sys.exit``, or what our tools' ``run_main`` prints."""
    with pytest.raises((SystemExit, PreflightError, CheckpointRefusedError)) as ended:
        launch()
    return ended.value.code if isinstance(ended.value, SystemExit) else f'error: {ended.value}'


@pytest.mark.parametrize('failure, resume', [(failure, resume) for failure in FAILURES for resume in (True, False)
                                             if resume or failure not in RESUME_ONLY])
def test_the_runner_and_the_tools_end_with_the_same_line(failure, resume, tmp_path):
    """One gate: mmdet's and mmseg's launchers (through the runner) and our tools word each failure alike, the
    role, the file, the problem and the fix on one line, before the work dir exists."""
    contents, problem, fix = FAILURES[failure]
    path = tmp_path / 'given.pth'
    if isinstance(contents, bytes):
        path.write_bytes(contents)
    elif contents is not None:
        torch.save(contents, path)
    role = '--resume' if resume else 'load_from'
    runner = line_of(lambda: OwnWorkDirRunner(model=TinyModel(), work_dir=str(tmp_path / 'work'),
                                              load_from=str(path), resume=resume))
    assert runner == line_of(lambda: read_run_checkpoint(str(path), role, resume))
    assert '\n' not in runner and f' {path} ' in runner and problem in runner and (fix or FIX[resume]) in runner
    assert runner.startswith('error: checkpoint ' if failure == 'pickled code' else f'error: {role} ')
    assert not (tmp_path / 'work').exists()


def test_a_work_dir_that_cannot_be_made_is_one_line(tmp_path):
    """mmdet's and mmseg's launchers (and ours, where root passes the writable check, e.g. under /proc) end with one
    line naming the work dir and the fix, not mmengine's traceback."""
    (tmp_path / 'a_file').write_text('')
    work_dir = str(tmp_path / 'a_file' / 'work')
    line = line_of(lambda: OwnWorkDirRunner(model=TinyModel(), work_dir=work_dir))
    assert line == f'error: work dir {work_dir} cannot be created (Not a directory); choose another --work-dir'


def test_resuming_another_models_training_checkpoint_is_one_line(tmp_path):
    """mmdet's and mmseg's train.py --resume hand the runner a training checkpoint of another model: torch's
    optimizer refuses its state with a traceback naming neither the file nor the fix; the runner ends with one line."""
    other = torch.nn.Sequential(torch.nn.Linear(2, 1), torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD([{'params': [p]} for p in other.parameters()], lr=0.1)
    path = tmp_path / 'other.pth'
    torch.save({'state_dict': {'linear.weight': torch.zeros(1, 2), 'linear.bias': torch.zeros(1)},
                'optimizer': optimizer.state_dict(), 'meta': {'epoch': 1, 'iter': 1},
                'message_hub': {'log_scalars': {}, 'runtime_info': {}, 'resumed_keys': {}}}, path)
    runner = OwnWorkDirRunner(model=TinyModel(), work_dir=str(tmp_path / 'work'),
                              optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.1)),
                              train_dataloader=torch.utils.data.DataLoader([torch.zeros(2)]),
                              train_cfg=dict(by_epoch=False, max_iters=1))
    line = line_of(lambda: runner.resume(str(path)))
    assert line.startswith(f'error: --resume {path} is not a checkpoint of this config (ValueError: ') and (
        line.endswith(f'; resume from a checkpoint this run wrote, or start from its weights with --cfg-options '
                      f'load_from={path}')), line
