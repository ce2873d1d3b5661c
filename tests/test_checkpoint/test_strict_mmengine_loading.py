"""strict_mmengine_loading (armed by ``import mmrmt``): every checkpoint mmengine loads is
read weights-only, on upstream mmengine and on onedl-mmengine (whose fallback to
``weights_only=False`` never runs), and a refused file is one line naming it."""
import io
import subprocess
import sys

import pytest
import torch

from mmrmt.checkpoint import CheckpointRefusedError, load_weights_only, read_checkpoint
from mmrmt.checkpoint.strict_mmengine_loading import REFUSAL_ADVICE
from helpers.code_in_checkpoint import save_pickle_payload


@pytest.fixture
def payload(tmp_path):
    marker = tmp_path / 'PWNED'
    return save_pickle_payload(tmp_path / 'payload.pth', marker), marker


def run_python(code: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-c', code, *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def test_load_weights_only_refuses_a_payload_in_one_line(payload):
    checkpoint, marker = payload
    with pytest.raises(CheckpointRefusedError) as refused:
        load_weights_only(str(checkpoint), map_location='cpu', weights_only=False)  # asked for, not done
    message = str(refused.value)
    assert message.startswith(f'checkpoint {checkpoint} holds Python objects besides weights (UnpicklingError: ')
    assert message.endswith(REFUSAL_ADVICE) and '\n' not in message
    advice = message.replace(str(checkpoint), '')
    assert 'weights_only' not in advice and 'Please use' not in advice  # torch's advice is left out
    assert not marker.exists()


def test_load_weights_only_reads_weights():
    buffer = io.BytesIO()
    torch.save({'state_dict': {'w': torch.arange(3.)}}, buffer)
    buffer.seek(0)
    assert torch.equal(load_weights_only(buffer)['state_dict']['w'], torch.arange(3.))


def test_read_checkpoint_leaves_out_torch_advice_for_a_blocked_module(payload):
    checkpoint, marker = payload
    with pytest.raises(ValueError) as refused:
        read_checkpoint(str(checkpoint))
    assert str(refused.value).startswith(f'{checkpoint} is not a readable PyTorch checkpoint: UnpicklingError: ')
    assert 'weights_only' not in str(refused.value).replace(str(checkpoint), '') and not marker.exists()


#: After ``import mmrmt``, import mmengine's checkpoint module (not imported by mmrmt) and report its loaders.
LOADERS_AFTER_IMPORT = """
import sys
import mmrmt
assert 'mmengine.runner.checkpoint' not in sys.modules
import mmengine.runner.checkpoint as checkpoint
from mmrmt.checkpoint import load_weights_only
from mmrmt.checkpoint.strict_mmengine_loading import load_from_local_weights_only
local = checkpoint.CheckpointLoader._schemes['']
print(getattr(local, '__wrapped__', local) is load_from_local_weights_only,
      getattr(checkpoint, '_safe_torch_load', load_weights_only) is load_weights_only)
"""


@pytest.mark.slow  # a fresh process
def test_mmengine_imported_after_mmrmt_loads_weights_only():
    result = run_python(LOADERS_AFTER_IMPORT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ['True', 'True']


@pytest.mark.slow  # a fresh process
def test_mmengine_imported_before_mmrmt_loads_weights_only():
    result = run_python(LOADERS_AFTER_IMPORT.replace('import mmrmt\nassert', 'import mmengine.runner\nassert not'
                                                     ).replace('as checkpoint\n', 'as checkpoint\nimport mmrmt\n'))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ['True', 'True']


@pytest.mark.slow  # a fresh process
def test_an_uncaught_refusal_ends_the_process_in_one_line(payload):
    checkpoint, marker = payload
    result = run_python('import sys, torch, mmrmt\nfrom mmengine.runner import CheckpointLoader\n'
                        'CheckpointLoader.load_checkpoint(sys.argv[1])', checkpoint)
    assert result.returncode == 1 and not marker.exists()
    (line, ) = result.stderr.splitlines()
    assert line.startswith(f'error: checkpoint {checkpoint} holds Python objects besides weights')
    assert line.endswith(REFUSAL_ADVICE)


@pytest.mark.slow  # a fresh process
def test_other_uncaught_errors_keep_their_traceback():
    result = run_python('import mmrmt\nraise KeyError("other")')
    assert result.returncode == 1
    assert result.stderr.startswith('Traceback') and result.stderr.strip().endswith("KeyError: 'other'")
