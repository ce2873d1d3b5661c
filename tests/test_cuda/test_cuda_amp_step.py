"""Mixed-precision training steps of a tiny detector and segmentor on a GPU,
with the loss scaling the authors used: static 512 (RetinaNet, UperNet) and
dynamic (Mask / Cascade R-CNN), as tools/train.py --amp sets it from the
config's ``amp_loss_scale``."""
import math
from pathlib import Path

import pytest
import torch
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper
from mmengine.registry import MODELS, init_default_scope
from mmengine.runner import Runner

from helpers.precision import NEEDS_CUDA

pytestmark = NEEDS_CUDA
REPO = Path(__file__).resolve().parents[2]
DEMO_CONFIGS = {'mmdet': REPO / 'configs/demo/mask-rcnn_rmt-t_fpn_demo.py',
                'mmseg': REPO / 'configs/demo/upernet_rmt-t_demo.py'}


@pytest.mark.parametrize('loss_scale', [512., 'dynamic'])
@pytest.mark.parametrize('scope', sorted(DEMO_CONFIGS))
def test_amp_training_steps_learn(scope: str, loss_scale, demo_root: Path):
    cfg = Config.fromfile(str(DEMO_CONFIGS[scope]))
    data_root = demo_root / ('coco' if scope == 'mmdet' else 'ade')
    cfg.train_dataloader.dataset.data_root = str(data_root)
    cfg.train_dataloader.update(num_workers=0, persistent_workers=False)
    init_default_scope(scope)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model).cuda().train()
    cfg.optim_wrapper.update(type='AmpOptimWrapper', loss_scale=loss_scale)
    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    batches = iter(Runner.build_dataloader(cfg.train_dataloader, seed=0))
    before = {name: param.detach().clone() for name, param in model.named_parameters()}
    losses = []
    for _ in range(3):
        log_vars = model.train_step(next(batches), optim_wrapper)
        losses.append(log_vars['loss'].item())
    assert all(math.isfinite(loss) for loss in losses)
    scale = optim_wrapper.loss_scaler.get_scale()
    if loss_scale == 'dynamic':
        assert scale > 0
    else:  # a static scale stays put (steps with an overflow are skipped)
        assert scale == loss_scale
    changed = [name for name, param in model.named_parameters() if not torch.equal(before[name], param)]
    assert any(name.startswith('backbone.patch_embed') for name in changed)  # the step reached the stem
    assert all(torch.isfinite(param).all() for param in model.parameters())
