"""Each zoo folder's metafile.yml lists its configs with what the configs say."""
from pathlib import Path

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
        if meta['Training Data'] == 'COCO':
            assert cfg.train_dataloader.dataset.type == 'CocoDataset'
            assert meta['Epochs'] == cfg.train_cfg.max_epochs
        else:
            assert cfg.train_dataloader.dataset.type == 'ADE20KDataset'
            assert meta['Iterations'] == cfg.train_cfg.max_iters
        assert model['Weights'] == cfg.model.backbone.init_cfg.checkpoint
        for result in model.get('Results', []):
            assert result['Dataset'] == meta['Training Data'] and result['Task'] in TASKS[result['Dataset']]
        assert meta['Results Source'].startswith(
            'reported by the authors' if 'Results' in model else 'none reported')
