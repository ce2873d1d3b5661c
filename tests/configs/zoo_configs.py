"""Loading and building the model-zoo configs (configs/rmt, rest, resmlp) in tests."""
import contextlib
import copy
import functools
from pathlib import Path
from typing import Iterator, List

from mmengine.config import Config
from mmengine.registry import MODELS, init_default_scope
from torch import nn

from mmrmt.datasets import DEMO_DET_CLASSES
from mmrmt.utils import replace_sync_bn_types

REPO = Path(__file__).resolve().parents[2]
CONFIG_DIR = REPO / 'configs'
ZOO_FOLDERS = ('rmt', 'rest', 'resmlp')

INIT_FUNCTIONS = ('uniform_', 'normal_', 'trunc_normal_', 'constant_', 'ones_', 'zeros_',
                  'kaiming_uniform_', 'kaiming_normal_', 'xavier_uniform_', 'xavier_normal_')


def zoo_config_paths() -> List[Path]:
    """Every experiment config of the model zoo, sorted."""
    return sorted(path for folder in ZOO_FOLDERS for path in (CONFIG_DIR / folder).glob('*.py'))


@functools.lru_cache(maxsize=None)
def _parse_config(path: Path) -> Config:
    return Config.fromfile(str(path))


def load_config(path: Path) -> Config:
    """A fresh copy of the config at ``path`` (each file is parsed once a
    session), its model set up for one CPU process (BN for SyncBN)."""
    cfg = copy.deepcopy(_parse_config(Path(path)))
    replace_sync_bn_types(cfg.model)
    return cfg


@contextlib.contextmanager
def skip_parameter_init() -> Iterator[None]:
    """Leave new parameters uninitialised (their shapes are all a count needs)."""
    saved = {name: getattr(nn.init, name) for name in INIT_FUNCTIONS}
    try:
        for name in INIT_FUNCTIONS:
            setattr(nn.init, name, lambda tensor, *args, **kwargs: tensor)
        yield
    finally:
        for name, function in saved.items():
            setattr(nn.init, name, function)


def build_model(cfg: Config) -> nn.Module:
    """Build ``cfg.model`` in the config's default scope (mmdet or mmseg)."""
    init_default_scope(cfg.default_scope)
    return MODELS.build(cfg.model)


def count_parameters(model: nn.Module) -> int:
    return sum(param.numel() for param in model.parameters())


def point_at_demo_data(cfg: Config, root: Path) -> None:
    """Point the train and val dataloaders of ``cfg`` at the demo sets under ``root``.

    COCO configs read ``root/coco`` (with the demo class names); ADE20K
    configs read ``root/ade``, whose label maps use ADE20K's convention.
    """
    for loader, split in (('train_dataloader', 'train'), ('val_dataloader', 'val')):
        dataset = cfg[loader].dataset
        if dataset.type == 'CocoDataset':
            dataset.update(data_root=str(root / 'coco'), ann_file=f'annotations/instances_{split}.json',
                           data_prefix=dict(img=f'{split}/'), metainfo=dict(classes=DEMO_DET_CLASSES))
        elif dataset.type == 'ADE20KDataset':
            dataset.data_root = str(root / 'ade')
        else:
            raise ValueError(f'no demo data for a {dataset.type}')
        cfg[loader].update(num_workers=0, persistent_workers=False)


def shrink_image_sizes(cfg: Config, factor: int) -> None:
    """Divide every resize scale and absolute crop size of the pipelines
    (RandomChoice branches too) and the segmentor's padding size by
    ``factor``, keeping the transforms."""

    def shrink(size):
        return tuple(side // factor for side in size)

    def shrink_pipeline(pipeline):
        for transform in pipeline:
            if 'scale' in transform:
                scale = transform['scale']
                transform['scale'] = ([shrink(s) for s in scale] if isinstance(scale[0], (list, tuple))
                                      else shrink(scale))
            if 'scales' in transform:
                transform['scales'] = [shrink(s) for s in transform['scales']]
            if 'crop_size' in transform and transform.get('crop_type', 'absolute').startswith('absolute'):
                transform['crop_size'] = shrink(transform['crop_size'])
            for branch in transform.get('transforms', []):  # RandomChoice's branches
                shrink_pipeline(branch)

    for loader in ('train_dataloader', 'val_dataloader'):
        shrink_pipeline(cfg[loader].dataset.pipeline)
    preprocessor = cfg.model.get('data_preprocessor', {})
    if preprocessor.get('size') is not None:
        preprocessor['size'] = shrink(preprocessor['size'])


def cap_rois(cfg: Config, sampled: int = 64, proposals: int = 100) -> None:
    """Fewer RoIs through the R-CNN heads of a two-stage ``cfg`` (a no-op otherwise):
    ``sampled`` per image in training, ``proposals`` per image at test time."""
    train_cfg, test_cfg = cfg.model.get('train_cfg', {}), cfg.model.get('test_cfg', {})
    if 'rcnn' not in train_cfg:
        return
    stages = train_cfg.rcnn if isinstance(train_cfg.rcnn, list) else [train_cfg.rcnn]
    for stage in stages:
        stage.sampler.num = sampled
    train_cfg.rpn_proposal.max_per_img = 4 * sampled
    test_cfg.rpn.max_per_img = proposals
