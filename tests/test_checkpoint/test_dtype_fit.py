"""Weights of another kind of number do not fit: an integer or boolean file
(a quantised one) where the model holds floating-point weights, or the
reverse, is one line through every loader below the tools; a half-precision
file loads into a float32 model, said in one log message."""
import logging
import re

import pytest
import torch
from mmengine.config import Config
from safetensors.torch import save_file

from mmrmt.checkpoint import TensorSpec, check_fit, fit_problems, load_model_weights, read_checkpoint, specs
from mmrmt.models import RMT
from mmrmt.utils import PreflightError, check_run_checkpoint
from helpers.backbones import RMT_TINY
from helpers.checkpoints import pretrained
from helpers.logs import LogCapture

KIND_PROBLEM = r'tensors hold another kind of number than the model\'s'


def as_dtype(state_dict: dict, dtype: torch.dtype) -> dict:
    """``state_dict`` with its floating-point tensors in ``dtype`` (a quantised file's int8, say)."""
    return {key: value.to(dtype) if value.is_floating_point() else value for key, value in state_dict.items()}


def write(state_dict: dict, path) -> str:
    """``state_dict`` saved as ``path`` (``.pth`` under ``state_dict``, or ``.safetensors``)."""
    if str(path).endswith('.safetensors'):
        save_file(state_dict, str(path))
    else:
        torch.save(dict(state_dict=state_dict), path)
    return str(path)


def run_config(folder) -> Config:
    """A run's config (only its file name matters to the check)."""
    (folder / 'run.py').write_text('model = None\n')
    return Config.fromfile(folder / 'run.py')


def tiny_rmt() -> RMT:
    return RMT(RMT_TINY)


def test_kinds_of_number_are_compared():
    model = {'w': TensorSpec(torch.Size([2]), torch.float32), 'n': TensorSpec(torch.Size([]), torch.int64)}
    assert fit_problems(model, {'w': TensorSpec(torch.Size([2]), torch.bfloat16),
                                'n': TensorSpec(torch.Size([]), torch.int32)}) == []
    problems = fit_problems(model, {'w': TensorSpec(torch.Size([2]), torch.int8),
                                    'n': TensorSpec(torch.Size([]), torch.float32)})
    assert len(problems) == 1
    assert problems[0].startswith("2 tensors hold another kind of number than the model's "
                                  '(w: file int8 vs model float32, n: file float32 vs model int64)')
    bool_problem, = fit_problems(model, {'w': TensorSpec(torch.Size([2]), torch.bool), 'n': model['n']})
    assert 'w: file bool vs model float32' in bool_problem


def test_casts_within_a_kind_are_one_note(caplog):
    weights = {'a': torch.zeros(2), 'b': torch.zeros(2), 'n': torch.zeros((), dtype=torch.int64)}
    with caplog.at_level(logging.INFO, logger='mmrmt.checkpoint.fit'):
        check_fit(specs(weights), weights, 'same.pth', 'M')
        check_fit(specs(weights), {'a': torch.zeros(2).half(), 'b': torch.zeros(2).half(),
                                   'n': torch.zeros((), dtype=torch.int32)}, 'half.pth', 'M')
    assert [record.getMessage() for record in caplog.records] == [
        "half.pth into M: 2 float16 tensors load as float32, 1 int32 tensors load as int64 (the model's dtypes)"]


def test_check_fit_logs_the_cast_once(caplog):
    model = torch.nn.Linear(2, 2)
    with caplog.at_level(logging.INFO, logger='mmrmt.checkpoint.fit'):
        check_fit(specs(model.state_dict()), as_dtype(model.state_dict(), torch.float16), 'half.pth', 'Linear')
    assert [record.getMessage() for record in caplog.records] == [
        "half.pth into Linear: 2 float16 tensors load as float32 (the model's dtypes)"]


@pytest.mark.parametrize('dtype', [torch.int8, torch.bool])
@pytest.mark.parametrize('suffix', ['.pth', '.safetensors'])
def test_a_tools_weights_of_another_kind_are_one_line(tmp_path, dtype, suffix):
    """``load_model_weights``: how the tools' --weights and the inferencers load a file."""
    model = tiny_rmt()
    before = {key: value.clone() for key, value in model.state_dict().items()}
    path = write(as_dtype(model.state_dict(), dtype), tmp_path / f'quantised{suffix}')
    with pytest.raises(ValueError, match=rf'^{re.escape(path)} does not fit RMT: \d+ {KIND_PROBLEM} '
                                         rf'\(\S+: file {str(dtype)[6:]} vs model float32') as error:
        load_model_weights(model, read_checkpoint(path), path)
    assert '\n' not in str(error.value)
    assert all(torch.equal(value, before[key]) for key, value in model.state_dict().items())


@pytest.mark.parametrize('dtype', [torch.int8, torch.bool])
@pytest.mark.parametrize('suffix', ['.pth', '.safetensors'])
def test_a_backbones_init_cfg_of_another_kind_is_one_line(tmp_path, dtype, suffix):
    path = write(as_dtype(tiny_rmt().state_dict(), dtype), tmp_path / f'quantised{suffix}')
    with pytest.raises(ValueError, match=rf'^{re.escape(path)} does not fit RMT: \d+ {KIND_PROBLEM}') as error:
        RMT(RMT_TINY, init_cfg=pretrained(path)).init_weights()
    assert '\n' not in str(error.value)


def test_a_floating_file_where_the_model_counts_is_refused(tmp_path):
    state = tiny_rmt().state_dict()
    state = {key: value.float() for key, value in state.items()}  # num_batches_tracked as float32
    with pytest.raises(ValueError, match=r'num_batches_tracked: file float32 vs model int64'):
        path = write(state, tmp_path / 'counts.safetensors')
        load_model_weights(tiny_rmt(), read_checkpoint(path), path)


def test_a_half_precision_init_cfg_loads(tmp_path, caplog):
    half = as_dtype(tiny_rmt().state_dict(), torch.float16)
    path = write(half, tmp_path / 'half.safetensors')
    model = RMT(RMT_TINY, init_cfg=pretrained(path))
    with caplog.at_level(logging.INFO, logger='mmrmt.checkpoint.fit'):
        model.init_weights()
    assert torch.equal(model.state_dict()['layers.0.blocks.0.ffn.fc1.weight'],
                       half['layers.0.blocks.0.ffn.fc1.weight'].float())
    notes = [record.getMessage() for record in caplog.records if record.name == 'mmrmt.checkpoint.fit']
    assert len(notes) == 1 and re.fullmatch(rf'{re.escape(path)} into RMT: \d+ float16 tensors load as float32 '
                                            r"\(the model's dtypes\)", notes[0]), notes


@pytest.mark.parametrize('dtype', [torch.int8, torch.bool])
def test_a_runs_checkpoint_of_another_kind_is_refused_before_the_run(tmp_path, dtype):
    """tools/train.py's load_from and --resume, tools/test.py's and mmdeploy_deploy.py's checkpoint."""
    model = tiny_rmt()
    path = write(as_dtype(model.state_dict(), dtype), tmp_path / 'quantised.pth')
    with pytest.raises(PreflightError, match=rf'^checkpoint {re.escape(path)} does not fit the model of \S+run.py: '
                                             rf'\d+ {KIND_PROBLEM}'):
        check_run_checkpoint(run_config(tmp_path), specs(model.state_dict()), path, 'checkpoint')


def test_a_runs_half_precision_checkpoint_is_said_in_the_log(tmp_path):
    model = tiny_rmt()
    path = write(as_dtype(model.state_dict(), torch.float16), tmp_path / 'half.pth')
    with LogCapture() as capture:
        check_run_checkpoint(run_config(tmp_path), specs(model.state_dict()), path, 'load_from')
    assert len(capture.containing('float16')) == 1
    assert re.fullmatch(rf'load_from {re.escape(path)} into the model of \S+run.py: \d+ float16 tensors load as '
                        r"float32 \(the model's dtypes\)", capture.containing('float16')[0])


def test_a_partial_load_of_integers_is_refused_too(tmp_path):
    """--allow-partial-load loads the tensors that match in shape, cast: never integers into floats."""
    model = tiny_rmt()
    state = model.state_dict()
    partial = {key: value for key, value in state.items() if not key.startswith('layers.3')}
    check_run_checkpoint(run_config(tmp_path), specs(state), write(partial, tmp_path / 'part.pth'), 'load_from',
                         allow_partial=True)
    quantised = write(as_dtype(partial, torch.int8), tmp_path / 'quantised_part.pth')
    with pytest.raises(PreflightError, match=rf'^load_from {re.escape(quantised)} does not fit the model '
                                             rf'of \S+run.py even in part: \d+ {KIND_PROBLEM}'):
        check_run_checkpoint(run_config(tmp_path), specs(state), quantised, 'load_from',
                             allow_partial=True)


def test_a_partial_load_of_half_precision_is_said_in_the_log(tmp_path):
    """--allow-partial-load: the casts of the tensors that load are logged as for a whole checkpoint (issue 49)."""
    state = tiny_rmt().state_dict()
    partial = as_dtype({key: value for key, value in state.items() if not key.startswith('layers.3')}, torch.float16)
    path = write(partial, tmp_path / 'half_part.pth')
    with LogCapture() as capture:
        check_run_checkpoint(run_config(tmp_path), specs(state), path, 'load_from', allow_partial=True)
    assert len(capture.containing('float16')) == 1
    assert re.fullmatch(rf'load_from {re.escape(path)} into the model of \S+run.py even in part: \d+ float16 tensors '
                        r"load as float32 \(the model's dtypes\)", capture.containing('float16')[0])
