"""The checkpoint a run loads (tools/test.py's CHECKPOINT, load_from, --resume, a Pretrained init_cfg),
checked before the run: each problem one line naming the file's role, the file and the fix. (That a tool ends
with such a line and writes nothing is tests/tools/test_bad_inputs_probe.py's, one row a tool.)"""
import pytest
import torch
from mmengine.config import Config

from mmrmt.utils import (PreflightError, build_cpu_model, check_run_checkpoint, config_model_specs, read_config,
                         read_run_checkpoint)
from helpers.tiny_configs import DET_CONFIG
from helpers.tool_modules import import_tool

UNREADABLE = 'is not a readable PyTorch checkpoint: '
ROLES = ['checkpoint', '--resume checkpoint', 'load_from checkpoint']


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
    assert refusal(read_run_checkpoint, str(path), role, resume=role.startswith('--resume')) == (
        f'{role} {path} {UNREADABLE}{reason}')


@pytest.mark.parametrize('role', ROLES)
def test_a_missing_file_is_named_with_its_role(role):
    assert refusal(read_run_checkpoint, 'missing.pth', role) == f'{role} not found: missing.pth'


def test_a_url_nothing_answers_is_one_line():
    url = 'http://127.0.0.1:9/checkpoint.pth'  # port 9, discard: refused at once, also offline
    assert refusal(read_run_checkpoint, url, 'load_from checkpoint').startswith(
        f'load_from checkpoint {url} could not be fetched (')


def test_a_backbone_file_cannot_be_resumed(tmp_path):
    path = tmp_path / 'backbone.pth'
    torch.save({'state_dict': {'patch_embed.proj.0.weight': torch.zeros(1)}}, path)
    assert read_run_checkpoint(str(path), 'load_from checkpoint')  # as weights it is read
    assert refusal(read_run_checkpoint, str(path), '--resume checkpoint', resume=True) == (
        f'--resume checkpoint {path} is not a training checkpoint (it has no message_hub, meta.epoch, meta.iter): '
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
    assert refusal(check_run_checkpoint, cfg, specs, str(path), 'load_from checkpoint').startswith(
        f'load_from checkpoint {path} does not fit the model of {DET_CONFIG}: 1 tensors differ in shape '
        '(roi_head.bbox_head.fc_cls.weight: file (11, 32) vs model (4, 32)). ')
    check_run_checkpoint(cfg, specs, str(path), 'load_from checkpoint', allow_partial=True)


def test_an_unreadable_pretrained_backbone_file(tmp_path):
    path = tmp_path / 'truncated.pth'
    torch.save({'state_dict': {'w': torch.zeros(64)}}, path)
    path.write_bytes(path.read_bytes()[:100])
    cfg = Config(dict(model=dict(backbone=dict(init_cfg=dict(type='Pretrained', checkpoint=str(path))))))
    assert refusal(import_tool('tools/train.py').check_pretrained_checkpoints, cfg.model) == (
        f'model.backbone.init_cfg checkpoint {path} {UNREADABLE}the file is truncated or corrupted (its zip '
        'directory is missing)')
