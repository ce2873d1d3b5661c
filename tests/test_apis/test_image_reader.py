"""The demos' one image reader: 8 bits a channel whatever the file holds, a
decompression bomb refused from its header."""
import numpy as np
import pytest
from PIL import Image

from mmrmt.apis import read_image
from mmrmt.utils import PreflightError
from helpers.images import blank_png, grey16_png


def test_a_16_bit_greyscale_png_is_scaled_not_clipped(tmp_path):
    image = read_image(grey16_png(tmp_path / 'grey16.png'), channel_order='rgb')
    assert image.dtype == np.uint8 and image.shape == (64, 96, 3)
    assert (image[:, :48] == 128).all() and (image[:, 48:] == 255).all()  # 32768 / 256, 65535 / 256
    assert abs(image.mean() - 191.5) < 1


def test_channel_orders(tmp_path):
    Image.new('RGB', (8, 4), (200, 120, 40)).save(tmp_path / 'orange.png')
    assert read_image(tmp_path / 'orange.png', channel_order='rgb')[0, 0].tolist() == [200, 120, 40]
    assert read_image(tmp_path / 'orange.png')[0, 0].tolist() == [40, 120, 200]


def test_a_decompression_bomb_is_refused_from_its_header(tmp_path):
    bomb = blank_png(tmp_path / 'bomb.png', 20000, 20000)
    with pytest.raises(PreflightError, match=r'^\S+bomb.png is 20000x20000 pixels, more than the demo takes '
                                             r'\(67,108,864 pixels, e\.g\. 8192x8192\); shrink it first$'):
        read_image(bomb)


def test_a_file_that_is_no_image_is_one_line(tmp_path):
    """A truncated JPEG is refused too, though OpenCV's imread decodes it (half grey, with a warning)."""
    Image.new('RGB', (132, 100), (200, 120, 40)).save(tmp_path / 'whole.jpg')
    whole = (tmp_path / 'whole.jpg').read_bytes()
    (tmp_path / 'truncated.jpg').write_bytes(whole[:len(whole) // 2])
    (tmp_path / 'broken.jpg').write_bytes(b'not an image')
    for name, problem in (('truncated.jpg', 'is not a decodable image (corrupt, truncated or another format)'),
                          ('broken.jpg', 'is not a decodable image (corrupt, truncated or another format)'),
                          ('missing.jpg', 'cannot be read (No such file or directory)')):
        with pytest.raises(PreflightError) as error:
            read_image(tmp_path / name)
        assert str(error.value) == f'{tmp_path / name} {problem}'
