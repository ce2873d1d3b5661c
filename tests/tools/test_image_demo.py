"""demo/image_demo.py on the demo data, as a user runs it: pictures and JSON
predictions for every readable image, a one-line error for the others.

The runs are subprocesses, as users run the demo (its refusals before the model, an existing output without
--force among them, are rows of test_bad_inputs_probe.py)."""
import json
import shutil
from pathlib import Path
from typing import List

import cv2
import numpy as np
from pycocotools import mask as mask_utils

from mmrmt.datasets import DEMO_DET_CLASSES, DEMO_SEG_CLASSES
from tool_process import DET_CONFIG, SEG_CONFIG, run_tool

IMAGE_DEMO = '../demo/image_demo.py'  # run_tool runs scripts relative to tools/
SIZE = 128  # the demo images' side


def three_images_and_a_corrupt_one(source: Path, folder: Path) -> List[Path]:
    """Copy the first three images of ``source`` into ``folder`` beside a corrupt
    JPEG (the first 200 bytes of a fourth one); return the three."""
    folder.mkdir()
    images = sorted(source.glob('*.jpg'))
    for image in images[:3]:
        shutil.copy(image, folder)
    (folder / 'corrupt.jpg').write_bytes(images[3].read_bytes()[:200])
    return [folder / image.name for image in images[:3]]


def assert_pictures_written(out_dir: Path, images: List[Path], scale: int = 1) -> None:
    assert sorted(path.name for path in (out_dir / 'vis').iterdir()) == [image.name for image in images]
    for image in images:
        picture = cv2.imread(str(out_dir / 'vis' / image.name))
        assert picture.shape == (SIZE * scale, SIZE * scale, 3)
        enlarged = cv2.resize(cv2.imread(str(image)), None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC)
        assert not np.array_equal(picture, enlarged), 'nothing was painted'


def assert_reports_corrupt_image(result, folder: Path) -> None:
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith('error:')]
    assert errors[0] == (f'error: {folder / "corrupt.jpg"} is not a decodable image '
                         '(corrupt, truncated or another format); skipped'), result.stderr[-2000:]
    assert errors[-1] == 'error: 1 of 4 images could not be read (listed above)'
    assert 'Traceback' not in result.stderr


def test_detection_demo_with_trained_weights(det_work_dir, demo_root, tmp_path):
    folder, out_dir = tmp_path / 'images', tmp_path / 'out'
    images = three_images_and_a_corrupt_one(demo_root / 'coco' / 'val', folder)
    result = run_tool([IMAGE_DEMO, folder, DET_CONFIG, '--weights', det_work_dir / 'iter_4.pth',
                       '--out-dir', out_dir, '--device', 'cpu', '--batch-size', '2',
                       '--pred-score-thr', '0.1', '--picture-scale', '2'])
    assert_reports_corrupt_image(result, folder)
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


def test_segmentation_demo_on_a_glob_replacing_a_picture_with_force(demo_root, tmp_path):
    folder, out_dir = tmp_path / 'images', tmp_path / 'out'
    images = three_images_and_a_corrupt_one(demo_root / 'ade' / 'images' / 'validation', folder)
    (out_dir / 'vis').mkdir(parents=True)
    (out_dir / 'vis' / images[0].name).write_bytes(b'a user file')  # without --force: one line (below)
    result = run_tool([IMAGE_DEMO, f'{folder}/*.jpg', SEG_CONFIG, '--out-dir', out_dir, '--force',
                       '--device', 'cpu', '--palette', 'ade20k', '--picture-scale', '3'])
    assert_reports_corrupt_image(result, folder)
    assert_pictures_written(out_dir, images, scale=3)  # the label maps below stay image-sized
    assert sorted(path.name for path in (out_dir / 'preds').iterdir()) == [
        f'{image.stem}.json' for image in images], 'temporary files left behind'
    for image in images:
        record = json.loads((out_dir / 'preds' / f'{image.stem}.json').read_text())
        assert record['classes'] == list(DEMO_SEG_CLASSES)
        label_map = np.array(record['sem_seg'])
        assert label_map.shape == (SIZE, SIZE)
        assert label_map.min() >= 0 and label_map.max() < len(DEMO_SEG_CLASSES)
