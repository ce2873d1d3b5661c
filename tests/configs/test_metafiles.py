"""Each zoo folder's metafile.yml lists its configs with what the configs say."""
import re

import pytest
import yaml

from zoo_configs import CONFIG_DIR, REPO, ZOO_FOLDERS, load_config

TASKS = {'COCO': ('Object Detection', 'Instance Segmentation'), 'ADE20K': ('Semantic Segmentation', )}


@pytest.mark.parametrize('folder', ZOO_FOLDERS)
def test_metafile_matches_configs(folder: str):
    metafile = yaml.safe_load((CONFIG_DIR / folder / 'metafile.yml').read_text())
    collections = [collection['Name'] for collection in metafile['Collections']]
    models = metafile['Models']
    assert sorted(model['Name'] for model in models) == sorted(
        path.stem for path in (CONFIG_DIR / folder).glob('*.py'))
    for model in models:
        assert model['In Collection'] in collections
        assert model['Config'] == f'configs/{folder}/{model["Name"]}.py'
        cfg = load_config(REPO / model['Config'])
        meta = model['Metadata']
        assert cfg.train_dataloader.dataset.type == ('CocoDataset' if meta['Training Data'] == 'COCO'
                                                     else 'ADE20KDataset')
        if 'Epochs' in meta:
            assert meta['Epochs'] == cfg.train_cfg.max_epochs
        else:  # iteration-based: the segmentors and ResT's detectors (detectron2's 90k)
            assert meta['Iterations'] == cfg.train_cfg.max_iters
        # mim's Weights are a trained model's checkpoint: none is published here
        assert 'Weights' not in model
        assert meta['Pretrained Backbone']['Checkpoint'] == cfg.model.backbone.init_cfg.checkpoint
        assert 'ImageNet-1k' in meta['Pretrained Backbone']['Source']
        # --auto-scale-lr: the learning rate is set for the batch the metafile names
        gpus, images = map(int, re.fullmatch(r'(\d+)x GPUs, (\d+) images each',
                                             meta['Training Resources']).groups())
        assert cfg.auto_scale_lr == dict(enable=False, base_batch_size=gpus * images)
        assert gpus * images == 16 and cfg.train_dataloader.batch_size == images
        # --tta: a TTA model and pipeline, as mmdet's and mmseg's configs have
        assert cfg.tta_model.type == ('mmrmt.InstanceSegTTAModel' if meta['Training Data'] == 'COCO'
                                      else 'SegTTAModel')
        assert cfg.tta_pipeline[-1].type == 'TestTimeAug'
        for result in model.get('Results', []):
            assert result['Dataset'] == meta['Training Data'] and result['Task'] in TASKS[result['Dataset']]
        assert meta['Results Source'].startswith(
            'reported by the authors' if 'Results' in model else 'none reported')
