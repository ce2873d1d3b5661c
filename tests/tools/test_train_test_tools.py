"""tools/train.py trains detection and segmentation configs and writes
checkpoints; tools/test.py evaluates them with the configs' metrics (both
runs are the shared fixtures of conftest.py), building the model once and reading its checkpoint once
(a reshaped checkpoint and missing data are refused in one line: tests/test_utils/test_run_checkpoint.py,
test_preflight.py)."""
import pickle
import sys
from typing import Callable

import numpy as np
import torch
from mmengine.registry import MODELS
from PIL import Image

from helpers.tool_modules import import_tool
from tool_process import DET_CONFIG, det_data_options, load_checkpoint, metric


def test_train_writes_detection_checkpoints(det_work_dir):
    checkpoint = load_checkpoint(det_work_dir / 'iter_4.pth')
    assert checkpoint['meta']['iter'] == 4
    assert any(key.startswith('backbone.layers.') for key in checkpoint['state_dict'])
    assert (det_work_dir / 'iter_2.pth').is_file()
    assert (det_work_dir / 'last_checkpoint').read_text().strip().endswith('iter_4.pth')


def test_test_prints_coco_map_and_dumps(det_test_run):
    for name in ('coco/bbox_mAP', 'coco/bbox_mAP_50', 'coco/segm_mAP'):
        assert 0.0 <= metric(det_test_run.stdout, name) <= 1.0
    predictions = pickle.loads(det_test_run.out.read_bytes())
    assert len(predictions) == 8
    assert {'bboxes', 'labels', 'scores', 'masks'} <= set(predictions[0]['pred_instances'])
    assert len(list(det_test_run.show.glob('*.jpg'))) == 8


def test_segmentation_train_then_test_prints_miou(seg_work_dir, seg_test_run):
    assert load_checkpoint(seg_work_dir / 'iter_4.pth')['meta']['iter'] == 4
    assert 0.0 <= metric(seg_test_run.stdout, 'mIoU') <= 100.0
    label_maps = sorted(seg_test_run.out.glob('*.png'))
    assert len(label_maps) == 8
    # ADE20K convention, like the annotations: 1..5 are the classes, 0 is never predicted
    labels = np.asarray(Image.open(label_maps[0]))
    assert labels.shape == (128, 128) and 1 <= labels.min() and labels.max() <= 5
    assert len(list(seg_test_run.show.rglob('*.png'))) == 8


def recording(function: Callable, calls: list, what: Callable) -> Callable:
    """``function``, appending ``what(its first argument)`` to ``calls`` at each call."""
    def record(first, *args, **kwargs):
        calls.append(what(first))
        return function(first, *args, **kwargs)
    return record


def test_test_builds_the_model_once_and_reads_its_checkpoint_once(det_work_dir, demo_root, tmp_path, monkeypatch):
    """One build, one read of the file: the runner tests the model the tool built, with the checkpoint's weights."""
    checkpoint, builds, reads, tested = det_work_dir / 'iter_4.pth', [], [], []
    tool = import_tool('tools/test.py')
    monkeypatch.setattr(MODELS, 'build', recording(MODELS.build, builds, lambda cfg: cfg.get('type')))
    monkeypatch.setattr(torch, 'load', recording(torch.load, reads, str))
    monkeypatch.setattr(tool, 'run_phase', recording(tool.run_phase, tested, lambda runner: runner.model.state_dict()))
    monkeypatch.setattr(sys, 'argv', ['test.py', str(DET_CONFIG), str(checkpoint), '--work-dir', str(tmp_path / 'w'),
                                      '--cfg-options', 'test_dataloader.dataset.indices=1',
                                      *det_data_options(demo_root)])
    tool.main()
    assert builds.count('MaskRCNN') == 1 and reads.count(str(checkpoint)) == 1
    weights = load_checkpoint(checkpoint)['state_dict']
    assert tested[0].keys() == weights.keys() and all(torch.equal(tested[0][key], weights[key]) for key in weights)
