"""make_demo_data: deterministic, idempotent, COCO and ADE20K layouts whose
annotations match the pictures."""
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pycocotools import mask as mask_utils

from mmrmt.datasets import DEMO_DET_CLASSES, DEMO_SEG_CLASSES, make_demo_data
from mmrmt.datasets.demo_data import SHAPE_COLOURS, SPLIT_SIZES


@pytest.fixture(scope='module')
def root(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp('demo')
    make_demo_data(str(path))
    return path


def digest(root: Path) -> dict:
    return {str(path.relative_to(root)): hashlib.md5(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob('*')) if path.is_file()}


def test_layout_and_counts(root):
    coco = root / 'coco'
    for split, count in SPLIT_SIZES['coco'].items():
        data = json.loads((coco / 'annotations' / f'instances_{split}.json').read_text())
        assert len(data['images']) == count == len(list((coco / split).glob('*.jpg')))
        assert [c['name'] for c in data['categories']] == list(DEMO_DET_CLASSES)
    for split, count in SPLIT_SIZES['ade'].items():
        assert len(list((root / 'ade' / 'images' / split).glob('*.jpg'))) == count
        assert len(list((root / 'ade' / 'annotations' / split).glob('*.png'))) == count


def test_coco_annotations_match_pictures(root):
    data = json.loads((root / 'coco' / 'annotations' / 'instances_val.json').read_text())
    files = {image['id']: image['file_name'] for image in data['images']}
    assert {a['category_id'] for a in data['annotations']} == {1, 2, 3}
    for annotation in data['annotations'][:40]:
        mask = mask_utils.decode(annotation['segmentation']).astype(bool)
        assert annotation['area'] == mask.sum() > 0
        ys, xs = np.nonzero(mask)
        assert annotation['bbox'] == [xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1]
        # the visible pixels carry the colour of the annotated shape
        image = np.asarray(Image.open(root / 'coco' / 'val' / files[annotation['image_id']]))
        mean = image[mask].mean(0)
        name = DEMO_DET_CLASSES[annotation['category_id'] - 1]
        assert np.argmax(mean) == np.argmax(SHAPE_COLOURS[name])


def test_ade_label_maps_use_the_ade_convention(root):
    labels = np.asarray(Image.open(root / 'ade' / 'annotations' / 'training' / 'training_0000.png'))
    assert labels.shape == (128, 128) and labels.dtype == np.uint8
    values = set(np.unique(labels))
    assert 0 in values  # unlabelled seams
    assert values <= set(range(len(DEMO_SEG_CLASSES) + 1))
    assert {1, 2} <= values  # sky and ground


def test_deterministic_and_idempotent(root, tmp_path):
    first = digest(root)
    make_demo_data(str(root))  # a finished set is left untouched
    assert digest(root) == first
    again = tmp_path / 'again'
    make_demo_data(str(again))
    assert digest(again) == first


@pytest.mark.slow  # a fresh process
def test_without_mmdet_only_the_ade_set_is_drawn_and_identical(root, tmp_path):
    """A segmentation-only environment: no mmdet, so no pycocotools to encode COCO masks."""
    script = ('import sys\n'
              'for name in ("mmdet", "pycocotools"):\n'
              '    sys.modules[name] = None  # as if not installed\n'
              'from mmrmt.datasets import make_demo_data\n'
              'make_demo_data(sys.argv[1])\n')
    result = subprocess.run([sys.executable, '-c', script, str(tmp_path)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(path.name for path in tmp_path.iterdir()) == ['ade']
    assert digest(tmp_path) == {name: value for name, value in digest(root).items() if name.startswith('ade/')}


@pytest.mark.parametrize('dataset', ['coco', 'ade'])
def test_a_real_dataset_under_the_root_is_never_written_into(dataset, tmp_path):
    """``--root data`` where data/coco is the user's COCO: refused, every file as it was."""
    annotation = tmp_path / dataset / 'annotations' / 'instances_val2017.json'
    annotation.parent.mkdir(parents=True)
    annotation.write_text('{"images": []}')
    with pytest.raises(ValueError) as error:
        make_demo_data(str(tmp_path))
    assert str(error.value) == (f'{tmp_path / dataset} already holds files that are not the demo data (a dataset '
                                'of yours?), which drawing it would overwrite: give a new or empty folder')
    assert [path for path in tmp_path.rglob('*') if path.is_file()] == [annotation]
    assert annotation.read_text() == '{"images": []}'


def test_empty_dataset_folders_receive_the_demo_data(root, tmp_path):
    (tmp_path / 'coco').mkdir()
    (tmp_path / 'ade').mkdir()
    make_demo_data(str(tmp_path))
    assert digest(tmp_path) == digest(root)
