"""demo/image_demo.py on the demo data, as a user runs it: pictures and JSON predictions for every readable image,
a one-line error for the others, exit status 1 (on segmentation, in-process: tests/test_demo/
test_image_demo_segmentation.py; its refusals before the model, an existing output without --force among them, are
rows of test_bad_inputs_probe.py)."""
import json

from pycocotools import mask as mask_utils

from mmrmt.datasets import DEMO_DET_CLASSES
from helpers.image_demo_runs import (SIZE, assert_pictures_written, assert_reports_corrupt_image,
                                     three_images_and_a_corrupt_one)
from tool_process import DET_CONFIG, run_tool

IMAGE_DEMO = '../demo/image_demo.py'  # run_tool runs scripts relative to tools/


def test_detection_demo_with_trained_weights(det_work_dir, demo_root, tmp_path):
    folder, out_dir = tmp_path / 'images', tmp_path / 'out'
    images = three_images_and_a_corrupt_one(demo_root / 'coco' / 'val', folder)
    result = run_tool([IMAGE_DEMO, folder, DET_CONFIG, '--weights', det_work_dir / 'iter_4.pth',
                       '--out-dir', out_dir, '--device', 'cpu', '--batch-size', '2',
                       '--pred-score-thr', '0.1', '--picture-scale', '2'])
    assert result.returncode == 1
    assert_reports_corrupt_image(result.stderr, folder)
    assert_pictures_written(out_dir, images, scale=2)  # the JSON below stays in pixels of the image
    assert sorted(path.name for path in (out_dir / 'preds').iterdir()) == [
        f'{image.stem}.json' for image in images]
    for image in images:
        record = json.loads((out_dir / 'preds' / f'{image.stem}.json').read_text())
        assert record['image'] == str(image) and record['classes'] == list(DEMO_DET_CLASSES)
        count = len(record['scores'])
        assert count > 0 and len(record['labels']) == len(record['bboxes']) == len(record['masks']) == count
        assert all(0 <= label < len(DEMO_DET_CLASSES) for label in record['labels'])
        assert all(0 <= x1 <= x2 <= SIZE and 0 <= y1 <= y2 <= SIZE for x1, y1, x2, y2 in record['bboxes'])
        masks = mask_utils.decode([dict(rle, counts=rle['counts'].encode()) for rle in record['masks']])
        assert masks.shape == (SIZE, SIZE, count)
