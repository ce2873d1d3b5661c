"""The image demo's checks of its inputs before any model: the images it finds, their decoded sizes, the
picture files it would write, the palettes it names, the sizes the config's test pipeline resizes to."""
from pathlib import Path

import cv2
import numpy as np
import pytest
from mmengine.config import Config

from mmrmt.apis import check_test_scale, collect_images, output_files, read_image_sizes
from mmrmt.apis.image_inference import resolve_palette
from mmrmt.utils import PreflightError


def test_inputs_are_checked_before_the_model(tmp_path):
    with pytest.raises(PreflightError, match='input not found: .*nothing.jpg'):
        collect_images(str(tmp_path / 'nothing.jpg'))
    with pytest.raises(PreflightError, match='no images'):
        collect_images(str(tmp_path))
    with pytest.raises(PreflightError, match=r'no file matches .*\*.png'):
        collect_images(str(tmp_path / '*.png'))
    (tmp_path / 'a').mkdir()
    cv2.imwrite(str(tmp_path / 'a' / 'x.png'), np.zeros((4, 4, 3), np.uint8))
    (tmp_path / 'b').mkdir()
    (tmp_path / 'b' / 'x.jpg').write_bytes(b'')
    (tmp_path / 'b' / 'notes.txt').write_text('not an image')
    found = collect_images(str(tmp_path / '**' / 'x.*'))
    assert found == [tmp_path / 'a' / 'x.png', tmp_path / 'b' / 'x.jpg']
    assert collect_images(str(tmp_path / 'b')) == [tmp_path / 'b' / 'x.jpg']
    sizes, problems = read_image_sizes(found)
    assert sizes == {tmp_path / 'a' / 'x.png': (4, 4)} and list(problems) == [tmp_path / 'b' / 'x.jpg']
    with pytest.raises(PreflightError, match='would write the same output files'):
        output_files(found, tmp_path / 'out', force=False)


def test_palettes_by_name():
    from mmdet.datasets import CocoDataset
    from mmseg.utils import get_palette
    assert resolve_palette('coco', 'mmdet', 3) == list(CocoDataset.METAINFO['palette'][:3])
    assert resolve_palette('ade20k', 'mmseg', 5) == [tuple(colour) for colour in get_palette('ade20k')[:5]]
    colours = resolve_palette('random', 'mmseg', 5)
    assert len(set(colours)) == 5 and colours == resolve_palette('random', 'mmdet', 5)
    with pytest.raises(PreflightError, match="unknown --palette 'ade20k': .*mmdet: coco, voc, citys"):
        resolve_palette('ade20k', 'mmdet', 3)
    with pytest.raises(PreflightError, match='--palette voc has 21 colours for 30 classes'):
        resolve_palette('voc', 'mmseg', 30)


def test_test_scale_follows_mmcv_resize():
    cfg = Config(dict(test_dataloader=dict(dataset=dict(pipeline=[
        dict(type='LoadImageFromFile'), dict(type='mmdet.Resize', scale=(1333, 800), keep_ratio=True)]))))
    check_test_scale(cfg, {Path('tall.png'): (20000, 8)})  # 0.53 pixels wide: rounded to one column
    with pytest.raises(PreflightError, match=r'tall\.png \(7x20000 pixels\) would be resized to 0x1333'):
        check_test_scale(cfg, {Path('tall.png'): (20000, 7)})
    cfg.test_dataloader.dataset.pipeline[1] = dict(type='Resize', scale=(64, 64), keep_ratio=False)
    check_test_scale(cfg, {Path('wide.png'): (50, 10000)})  # stretched to 64x64
