"""One training step and one inference of each algorithm x backbone family,
through the config's own pipelines, optimizer and model, on the demo data.

Each runs the family's smallest config with images shrunk 8-10x, two images
a batch, 64 RoIs per image through R-CNN heads, no pretrained checkpoint and
plain BN instead of SyncBN.
"""
import math
from pathlib import Path

import pytest
import torch
from mmengine.optim import build_optim_wrapper
from mmengine.runner import Runner
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from released_recipes import RELEASED_RECIPES
from zoo_configs import CONFIG_DIR, build_model, cap_rois, load_config, point_at_demo_data, shrink_image_sizes

STEP_CONFIGS = [
    'rmt/retinanet_rmt-t_fpn_1x_coco.py',
    'rmt/mask-rcnn_rmt-t_fpn_1x_coco.py',
    'rmt/cascade-mask-rcnn_rmt-t_fpn_ms-3x_coco.py',
    'rmt/fpn_rmt-t_8xb2-80k_ade20k-512x512.py',
    'rmt/upernet_rmt-t_8xb2-160k_ade20k-512x512.py',
    'rest/retinanet_rest-small_fpn_ms-1x_coco.py',
    'rest/mask-rcnn_rest-small_fpn_ms-1x_coco.py',
    'rest/upernet_rest-small_4xb4-160k_ade20k-512x512.py',
    'resmlp/retinanet_resmlp-12_fpn_1x_coco.py',
    'resmlp/mask-rcnn_resmlp-12_fpn_1x_coco.py',
    'resmlp/upernet_resmlp-12_4xb4-160k_ade20k-512x512.py',
]
# COCO scales (1333, 800) become (133, 80); ADE20K's (2048, 512) and its
# 512x512 crops become (256, 64) and 64x64.
SHRINK = {'mmdet': 10, 'mmseg': 8}
NO_DECAY_SUFFIXES = ('.ls1', '.ls2', '.alpha', '.beta')


def exempt_from_decay(model: nn.Module) -> set:
    """Names of the parameters the configs without a released recipe (ResMLP,
    ResT's UperNet) promise not to decay: norm layers' and ResMLP's layer
    scales (``ls*``) and Affine norms; test_config_recipes.py checks the others."""
    names = set()
    for module_name, module in model.named_modules():
        if isinstance(module, (_BatchNorm, nn.LayerNorm, nn.GroupNorm)):
            names |= {f'{module_name}.{name}' for name, _ in module.named_parameters(recurse=False)}
    return names | {name for name, _ in model.named_parameters()
                    if name.endswith(NO_DECAY_SUFFIXES)}


@pytest.mark.parametrize('config', STEP_CONFIGS)
def test_config_trains_one_step_and_infers(config: str, demo_root: Path):
    cfg = load_config(CONFIG_DIR / config)
    assert cfg.model.backbone.init_cfg['checkpoint'].startswith('checkpoints/')
    cfg.model.backbone.init_cfg = None
    point_at_demo_data(cfg, demo_root)
    shrink_image_sizes(cfg, SHRINK[cfg.default_scope])
    cap_rois(cfg)
    cfg.train_dataloader.batch_size = 2
    torch.manual_seed(0)
    model = build_model(cfg)  # PyTorch's default initialisation is enough for one step

    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    if Path(config).stem not in RELEASED_RECIPES:
        weight_decay = cfg.optim_wrapper.optimizer.weight_decay
        names = {id(param): name for name, param in model.named_parameters()}
        exempt = exempt_from_decay(model)
        for group in optim_wrapper.optimizer.param_groups:
            for param in group['params']:
                expected = 0. if names[id(param)] in exempt else weight_decay
                assert group['weight_decay'] == expected, names[id(param)]

    train_batch = next(iter(Runner.build_dataloader(cfg.train_dataloader, seed=0)))
    first_weight = next(param for param in model.backbone.parameters() if param.requires_grad)
    before = first_weight.detach().clone()
    model.train()
    log_vars = model.train_step(train_batch, optim_wrapper)
    assert math.isfinite(log_vars['loss'].item()) and log_vars['loss'].item() > 0
    assert not torch.equal(before, first_weight.detach())  # the step reached the first stage that learns

    val_batch = next(iter(Runner.build_dataloader(cfg.val_dataloader, seed=0)))
    model.eval()
    with torch.no_grad():
        outputs = model.test_step(val_batch)
    assert len(outputs) == len(val_batch['inputs'])
    for sample in outputs:
        height, width = sample.ori_shape
        if cfg.default_scope == 'mmseg':
            assert sample.pred_sem_seg.data.shape == (1, height, width)
        else:
            predictions = sample.pred_instances
            assert predictions.bboxes.shape == (len(predictions), 4)
            assert torch.isfinite(predictions.bboxes).all()
            if 'masks' in predictions:
                assert predictions.masks.shape == (len(predictions), height, width)
