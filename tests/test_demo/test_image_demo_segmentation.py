"""demo/image_demo.py in-process on segmentation: label maps and pictures of every readable image of a glob, an
existing picture replaced with --force, one line for the corrupt image (the demo as a process, on detection:
tests/tools/test_image_demo.py; its refusals before the model: test_bad_inputs_probe.py)."""
import json

import numpy as np
import pytest

from mmrmt.datasets import DEMO_SEG_CLASSES
from helpers.image_demo_runs import (SIZE, assert_pictures_written, assert_reports_corrupt_image,
                                     three_images_and_a_corrupt_one)
from helpers.tiny_configs import SEG_CONFIG
from helpers.tool_modules import exit_line, import_tool

image_demo = import_tool('demo/image_demo.py')
pytestmark = pytest.mark.slow  # a segmentor built and run on three images


def test_segmentation_demo_on_a_glob_replacing_a_picture_with_force(demo_root, tmp_path, capsys):
    folder, out_dir = tmp_path / 'images', tmp_path / 'out'
    images = three_images_and_a_corrupt_one(demo_root / 'ade' / 'images' / 'validation', folder)
    (out_dir / 'vis').mkdir(parents=True)
    (out_dir / 'vis' / images[0].name).write_bytes(b'a user file')  # without --force: one line (the probe's)
    line = exit_line(image_demo.main, [f'{folder}/*.jpg', SEG_CONFIG, '--out-dir', out_dir, '--force', '--device',
                                       'cpu', '--palette', 'ade20k', '--picture-scale', '3'])
    assert_reports_corrupt_image(capsys.readouterr().err + line, folder)
    assert_pictures_written(out_dir, images, scale=3)  # the label maps below stay image-sized
    assert sorted(path.name for path in (out_dir / 'preds').iterdir()) == [
        f'{image.stem}.json' for image in images], 'temporary files left behind'
    for image in images:
        record = json.loads((out_dir / 'preds' / f'{image.stem}.json').read_text())
        assert record['classes'] == list(DEMO_SEG_CLASSES)
        label_map = np.array(record['sem_seg'])
        assert label_map.shape == (SIZE, SIZE)
        assert label_map.min() >= 0 and label_map.max() < len(DEMO_SEG_CLASSES)
