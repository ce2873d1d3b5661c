"""mmrmt.upstream_fixes (applied by ``import mmrmt`` where mmdet or mmseg is installed): every
checkpoint mmengine loads is read weights-only, on upstream mmengine and on onedl-mmengine (whose
fallback to ``weights_only=False`` never runs), a refused file is one line naming it, the file, the
reason and the fix; each fix can be turned off, and names its bug and versions."""
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mmrmt.checkpoint import REFUSAL_ADVICE, CheckpointRefusedError, load_weights_only, read_checkpoint
from mmrmt.upstream_fixes import OFF_VARIABLE, UPSTREAM_FIXES, apply_upstream_fixes
from helpers.code_in_checkpoint import save_pickle_payload


@pytest.fixture
def payload(tmp_path):
    marker = tmp_path / 'PWNED'
    return save_pickle_payload(tmp_path / 'payload.pth', marker), marker


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


def test_read_checkpoint_refuses_a_blocked_module_in_the_same_words(payload):
    checkpoint, marker = payload
    with pytest.raises(CheckpointRefusedError) as refused:
        read_checkpoint(str(checkpoint))
    assert str(refused.value).startswith(f'checkpoint {checkpoint} holds Python objects besides weights (Unpickling')
    assert 'weights_only' not in str(refused.value).replace(str(checkpoint), '') and not marker.exists()


#: After ``import mmrmt``, mmengine's loaders.
LOADERS_AFTER_IMPORT = """
import mmrmt
import mmengine.runner.checkpoint as checkpoint
from mmrmt.checkpoint import load_weights_only
from mmrmt.upstream_fixes import load_from_local_weights_only
local = checkpoint.CheckpointLoader._schemes['']
print(getattr(local, '__wrapped__', local) is load_from_local_weights_only,
      getattr(checkpoint, '_safe_torch_load', load_weights_only) is load_weights_only)
"""


def run_python(code: str, *args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-c', code, *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.slow  # a fresh process
def test_mmengine_imported_after_mmrmt_loads_weights_only():
    result = run_python(LOADERS_AFTER_IMPORT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ['True', 'True']


@pytest.mark.slow  # a fresh process
def test_mmengine_imported_before_mmrmt_loads_weights_only():
    result = run_python('import mmengine.runner\n' + LOADERS_AFTER_IMPORT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ['True', 'True']


@pytest.mark.slow  # a fresh process
def test_an_uncaught_refusal_ends_in_a_traceback_whose_last_line_names_file_reason_and_fix(payload):
    checkpoint, marker = payload
    result = run_python('import sys, torch, mmrmt\nfrom mmengine.runner import CheckpointLoader\n'
                        'CheckpointLoader.load_checkpoint(sys.argv[1])', checkpoint)
    assert result.returncode == 1 and not marker.exists()
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f'mmrmt.checkpoint.weights_only.CheckpointRefusedError: checkpoint {checkpoint} '
                           'holds Python objects besides weights (UnpicklingError: ')
    assert last.endswith(REFUSAL_ADVICE)


@pytest.mark.slow  # a fresh process
def test_a_fix_turned_off_leaves_upstream_code_as_it_is():
    env = {**os.environ, OFF_VARIABLE: 'weights-only-loading'}
    result = run_python(LOADERS_AFTER_IMPORT, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ['False', 'True']  # upstream mmengine has no _safe_torch_load


def test_an_unknown_name_to_turn_off_is_one_line(monkeypatch):
    monkeypatch.setenv(OFF_VARIABLE, 'weights-only-loadin')
    with pytest.raises(ValueError, match=rf'^{OFF_VARIABLE} names no fix \['):
        apply_upstream_fixes('weights-only-loading')


def test_every_fix_names_its_bug_versions_and_what_it_replaces():
    for name, fix in UPSTREAM_FIXES.items():
        assert fix.bug and fix.versions and fix.replaces, name
        assert any(word in fix.versions for word in ('mmengine', 'mmseg')), name


def test_docs_design_lists_every_fix():
    design = (Path(__file__).parents[1] / 'docs' / 'design.md').read_text()
    assert all(f'`{name}`' in design for name in UPSTREAM_FIXES)
