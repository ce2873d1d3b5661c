"""tools/deployment/mmdeploy_deploy.py where mmdeploy is not installed (the onedl forks' environment, or an upstream
one without the mmdeploy extra): every input is checked first, then one line names the missing extra, and nothing
is written."""
import sys

import cv2
import numpy as np
import pytest

from helpers.tiny_configs import DET_CONFIG
from helpers.tool_modules import REPO, exit_line, import_tool

deploy_tool = import_tool('tools/deployment/mmdeploy_deploy.py')
MISSING_EXTRA = ('error: mmdeploy is not installed; install the mmdeploy extra: make setup, or pip install --no-deps '
                 '-c requirements/constraints.txt -r requirements/mmdeploy.txt')


@pytest.mark.parametrize('image_name', ['image.png', 'none.png'], ids=['good-inputs', 'missing-image'])
def test_without_mmdeploy_the_inputs_then_the_extra_are_one_line(image_name, tmp_path, monkeypatch, capsys):
    cv2.imwrite(str(tmp_path / 'image.png'), np.zeros((64, 64, 3), np.uint8))
    monkeypatch.setitem(sys.modules, 'mmdeploy', None)  # importlib.util.find_spec('mmdeploy') is then None
    deploy = REPO / 'configs' / 'deploy' / 'instance-seg_onnxruntime_static.py'
    image = tmp_path / image_name
    line = exit_line(deploy_tool.main, [deploy, DET_CONFIG, image, '--work-dir', tmp_path / 'work'])
    assert line == (MISSING_EXTRA if image.exists() else f'error: image {image} does not exist')
    assert capsys.readouterr() == ('', '')
    assert sorted(path.name for path in tmp_path.iterdir()) == ['image.png']
