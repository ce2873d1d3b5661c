"""tools/analysis_tools/visualize_decay.py as a user runs it (its maps and picture:
tests/test_analysis_tools/test_decay_picture.py; without --force an existing --out is one line, as each bad
input: test_bad_inputs_probe.py)."""
import cv2
import numpy as np

from tool_process import DET_CONFIG, check_ok, run_tool


def test_force_replaces_an_existing_picture(tmp_path):
    image, out = tmp_path / 'image.png', tmp_path / 'out.png'
    cv2.imwrite(str(image), np.full((100, 132, 3), 90, np.uint8))
    out.write_bytes(b'keep me')
    result = run_tool(['analysis_tools/visualize_decay.py', DET_CONFIG, '--image', image, '--out', out, '--force'])
    check_ok(result)
    assert result.stdout.startswith(f'{out}: ') and cv2.imread(str(out)) is not None
