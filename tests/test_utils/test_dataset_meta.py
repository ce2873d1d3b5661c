"""config_dataset_meta: the class names (and palette) of a config's test set, read in one place."""
from pathlib import Path

import pytest
from mmdet.datasets import CocoDataset
from mmengine.config import Config
from mmseg.datasets import ADE20KDataset

from mmrmt.utils import PreflightError, config_dataset_meta

REPO = Path(__file__).resolve().parents[2]


def test_the_config_s_own_classes_or_the_dataset_s():
    demo = Config.fromfile(str(REPO / 'tests' / 'data' / 'configs' / 'mask-rcnn_rmt-tiny_fpn_test.py'))
    assert config_dataset_meta(demo)['classes'] == list(demo.test_dataloader.dataset.metainfo.classes)
    coco = Config.fromfile(str(REPO / 'configs' / 'rmt' / 'retinanet_rmt-t_fpn_1x_coco.py'))
    assert config_dataset_meta(coco) == dict(classes=list(CocoDataset.METAINFO['classes']),
                                             palette=list(CocoDataset.METAINFO['palette']))
    ade = Config.fromfile(str(REPO / 'configs' / 'rmt' / 'upernet_rmt-t_8xb2-160k_ade20k-512x512.py'))
    assert config_dataset_meta(ade)['classes'] == list(ADE20KDataset.METAINFO['classes'])


def test_without_loaders_nothing_and_a_broken_dataset_is_one_line():
    assert config_dataset_meta(Config(dict(default_scope='mmdet'))) == {}
    broken = Config(dict(default_scope='mmdet', test_dataloader=dict(dataset=dict(type='NoSuchDataset'))))
    with pytest.raises(PreflightError, match=r'^the test set of None does not build: KeyError: .*NoSuchDataset'):
        config_dataset_meta(broken)
