"""tools/train.py trains detection and segmentation configs and writes
checkpoints; tools/test.py evaluates them with the configs' metrics (both
runs are the shared fixtures of conftest.py)."""
import pickle

import numpy as np
from PIL import Image

from tool_process import load_checkpoint, metric


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
