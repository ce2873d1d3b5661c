"""tools/deployment/mmdeploy_deploy.py where mmdeploy is not installed (the onedl forks'
environment, or an upstream one without the mmdeploy extra): every input is checked first,
then one line names the missing extra, and nothing is written."""
import sys

import cv2
import numpy as np

from tool_process import DET_CONFIG, REPO, exit_message

TOOL = 'deployment/mmdeploy_deploy.py'


def test_good_inputs_without_mmdeploy_end_in_one_line_naming_the_extra(tmp_path, monkeypatch, capsys):
    image = tmp_path / 'image.png'
    cv2.imwrite(str(image), np.zeros((64, 64, 3), np.uint8))
    monkeypatch.setitem(sys.modules, 'mmdeploy', None)  # importlib.util.find_spec('mmdeploy') is then None
    deploy = REPO / 'configs' / 'deploy' / 'instance-seg_onnxruntime_static.py'
    message = exit_message(TOOL, [deploy, DET_CONFIG, image, '--work-dir', tmp_path / 'work'], monkeypatch, capsys)
    assert message == ('error: mmdeploy is not installed; install the mmdeploy extra: make setup, or pip install '
                       '--no-deps -c requirements/constraints.txt -r requirements/mmdeploy.txt')
    assert sorted(path.name for path in tmp_path.iterdir()) == ['image.png']


def test_a_bad_input_is_named_before_the_missing_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, 'mmdeploy', None)
    deploy = REPO / 'configs' / 'deploy' / 'instance-seg_onnxruntime_static.py'
    message = exit_message(TOOL, [deploy, DET_CONFIG, tmp_path / 'none.png', '--work-dir', tmp_path / 'work'],
                           monkeypatch, capsys)
    assert message == f'error: image {tmp_path / "none.png"} does not exist'
    assert list(tmp_path.iterdir()) == []
