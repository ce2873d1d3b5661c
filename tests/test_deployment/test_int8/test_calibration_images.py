"""The calibration images of a folder: those that decode, each other one named in a warning."""
import logging

import mmengine.logging
import numpy as np
import pytest
from PIL import Image

from mmrmt.deployment.int8 import usable_images


@pytest.fixture
def folder(tmp_path):
    for index in range(3):
        Image.fromarray(np.full((8, 8, 3), index * 40, np.uint8)).save(tmp_path / f'{index}.jpg')
    return tmp_path


def test_a_corrupt_image_among_good_ones_is_skipped_with_a_warning(folder, monkeypatch):
    """Each skipped file is one warning of mmengine's current logger (recorded at print_log, so that
    no earlier test's logger handlers decide what this test sees)."""
    logged = []
    monkeypatch.setattr(mmengine.logging, 'print_log',
                        lambda message, logger=None, level=logging.INFO: logged.append((level, logger, message)))
    whole = (folder / '1.jpg').read_bytes()
    (folder / '1.jpg').write_bytes(whole[:len(whole) // 2])  # truncated
    (folder / '2b.png').write_text('not an image')
    assert usable_images(str(folder), 5) == [str(folder / '0.jpg'), str(folder / '2.jpg')]
    assert [(level, logger, message.split(',')[0]) for level, logger, message in logged] == [
        (logging.WARNING, 'current', f'calibration: skipped {folder / "1.jpg"}'),
        (logging.WARNING, 'current', f'calibration: skipped {folder / "2b.png"}')]
    assert all(', not a readable image (' in message for _, _, message in logged)


def test_count_stops_the_reading(folder):
    assert usable_images(str(folder), 2) == [str(folder / '0.jpg'), str(folder / '1.jpg')]


def test_a_folder_without_a_usable_image_is_one_error(folder, tmp_path_factory):
    for path in folder.iterdir():
        path.write_bytes(b'\xff\xd8 broken')
    with pytest.raises(ValueError) as error:
        usable_images(str(folder), 4)
    assert str(error.value) == (f'--images {folder}: its 3 image file(s) are all unreadable; give a folder of '
                                'images to calibrate on')
    empty = tmp_path_factory.mktemp('empty')
    (empty / 'notes.txt').write_text('')
    with pytest.raises(ValueError, match=r'holds no \.jpg, \.jpeg, \.png or \.bmp file; give a folder'):
        usable_images(str(empty), 4)
