"""demo/image_demo.py on a folder of demo images beside a corrupt one: the inputs, and what a run writes and reports."""
import shutil
from pathlib import Path
from typing import List

import cv2
import numpy as np

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


def assert_reports_corrupt_image(stderr: str, folder: Path) -> None:
    """The run's ``stderr`` names the corrupt image, then ends with the count of unread ones, and no traceback."""
    errors = [line for line in stderr.splitlines() if line.startswith('error:')]
    assert errors[0] == (f'error: {folder / "corrupt.jpg"} is not a decodable image '
                         '(corrupt, truncated or another format); skipped'), stderr[-2000:]
    assert errors[-1] == 'error: 1 of 4 images could not be read (listed above)'
    assert 'Traceback' not in stderr
