"""tools/deployment/measure_deployment.sh checks its inputs before it times anything: a missing,
unreadable or other model's checkpoint, an existing or uncreatable OUT_DIR each end it in one
`error:` line, with nothing written (no OUT_DIR left behind)."""
import subprocess
from pathlib import Path

import pytest
import torch

from tool_process import REPO, run_script


def run(checkpoint: Path, out: Path) -> subprocess.CompletedProcess:
    return run_script(REPO / 'tools' / 'deployment' / 'measure_deployment.sh', [checkpoint, out])


@pytest.mark.parametrize('name,content,message', [
    ('missing.pth', None, 'demo checkpoint not found'),
    ('empty.pth', b'', 'is not a readable PyTorch checkpoint: the file is empty'),
    ('other.pth', {'state_dict': {'backbone.other': torch.zeros(1)}}, 'Is it a checkpoint of another model?'),
])
def test_a_bad_checkpoint_ends_in_one_line_before_any_timing(tmp_path, name, content, message):
    checkpoint, out = tmp_path / name, tmp_path / 'measured'
    if isinstance(content, bytes):
        checkpoint.write_bytes(content)
    elif content is not None:
        torch.save(content, checkpoint)
    result = run(checkpoint, out)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith('error: ') and message in last, result.stderr[-2000:]
    assert '## speed' not in result.stdout and not out.exists()


def test_an_existing_or_uncreatable_out_dir_ends_in_one_line(tmp_path):
    checkpoint = tmp_path / 'demo.pth'
    checkpoint.write_bytes(b'x')
    existing = tmp_path / 'existing'
    existing.mkdir()
    (existing / 'mine.txt').write_text('kept')
    result = run(checkpoint, existing)
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1] == (
        f'error: {existing} exists; give a new OUT_DIR')
    assert [path.name for path in existing.iterdir()] == ['mine.txt']
    under_a_file = tmp_path / 'demo.pth' / 'out'
    result = run(checkpoint, under_a_file)
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1] == (
        f'error: cannot create {under_a_file} (its folder is not writable); give another OUT_DIR')
