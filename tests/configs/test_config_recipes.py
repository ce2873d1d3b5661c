"""Every RMT and ResT config trains with the recipe its authors released.

The expected values are released_recipes.py's table, written from the
authors' files; each resolved config is checked against it: optimizer, the
weight decay of every parameter of the built model, the lr at every
iteration, images a GPU and the total batch, pipelines, fp16 loss scaling,
checkpoint selection.
"""
from typing import Dict, List

import numpy as np
import pytest
import torch
from mmengine.optim import build_optim_wrapper
from mmengine.registry import PARAM_SCHEDULERS, TRANSFORMS, init_default_scope

from helpers.rounding import assert_close, two_implementations, unit_roundoff
from released_recipes import D2_SCALES, DETR_POLICIES, RELEASED_RECIPES, TOTAL_BATCH, released_decay, released_lr
from zoo_configs import CONFIG_DIR, build_model, load_config, skip_parameter_init

#: Roundings of one iteration's lr in float64: mmengine's chained schedulers update it from the last one
#: (LinearLR's factor: 7 operations; PolyLR's: 6, its power among them; MultiStepLR's gamma power and
#: product: 2), the closed form of released_lr a fixed few more.
ROUNDINGS_PER_ITERATION = 16
CONFIGS = {name: CONFIG_DIR / name.split('_')[1].split('-')[0] / f'{name}.py' for name in RELEASED_RECIPES}


def test_table_covers_every_rmt_and_rest_detection_and_rmt_segmentation_config():
    ours = {path.stem for folder in ('rmt', 'rest') for path in (CONFIG_DIR / folder).glob('*.py')
            if not path.stem.startswith('upernet_rest')}  # the ResT authors released no segmentation
    assert ours == set(RELEASED_RECIPES)
    assert all(path.is_file() for path in CONFIGS.values())


@pytest.mark.parametrize('name', sorted(RELEASED_RECIPES))
def test_optimizer_batch_precision_and_checkpoints(name: str):
    cfg, recipe = load_config(CONFIGS[name]), RELEASED_RECIPES[name]
    optimizer = cfg.optim_wrapper.optimizer
    assert (optimizer.type, optimizer.lr, optimizer.weight_decay) == ('AdamW', recipe.lr, recipe.weight_decay)
    assert tuple(optimizer.get('betas', (0.9, 0.999))) == (0.9, 0.999)
    assert cfg.optim_wrapper.get('clip_grad') == (None if recipe.clip_grad is None
                                                  else dict(max_norm=recipe.clip_grad, norm_type=2))
    assert cfg.train_dataloader.batch_size == recipe.images_per_gpu
    assert cfg.auto_scale_lr.base_batch_size == TOTAL_BATCH
    assert cfg.get('amp_loss_scale') == recipe.loss_scale
    assert cfg.model.backbone.drop_path_rate == recipe.drop_path_rate
    assert cfg.model.backbone.get('frozen_stages', -1) == recipe.frozen_stages
    if recipe.eval_interval is not None:
        assert cfg.train_cfg.val_interval == cfg.default_hooks.checkpoint.interval == recipe.eval_interval
    assert cfg.default_hooks.checkpoint.get('save_best') == recipe.save_best


def _models_by_recipe() -> Dict[str, List[str]]:
    """Config names grouped by what decides the weight decays: model and rules."""
    groups: Dict[str, List[str]] = {}
    for name, recipe in sorted(RELEASED_RECIPES.items()):
        key = f'{name.replace("ms-3x", "1x").replace("160k", "80k")}|{recipe.rules}'
        groups.setdefault(key, []).append(name)
    return groups


@pytest.mark.parametrize('names', list(_models_by_recipe().values()), ids=lambda names: names[0])
def test_every_parameter_decays_as_released(names: List[str]):
    """mmengine's optimizer constructor, given our paramwise_cfg, decays each
    parameter of the built model as mmcv 1.x's did with the released one."""
    cfg = load_config(CONFIGS[names[0]])
    cfg.model.backbone.init_cfg = None
    with skip_parameter_init():
        model = build_model(cfg)
    for name in names:
        recipe, cfg = RELEASED_RECIPES[name], load_config(CONFIGS[name])
        optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
        ours = {id(param): (group['lr'], group['weight_decay'])
                for group in optim_wrapper.optimizer.param_groups for param in group['params']}
        is_rest = cfg.model.backbone.type == 'ResT'
        norm_params = {f'{module_name}.{param_name}' for module_name, module in model.named_modules()
                       if isinstance(module, (torch.nn.modules.batchnorm._BatchNorm, torch.nn.LayerNorm,
                                              torch.nn.GroupNorm, torch.nn.modules.instancenorm._InstanceNorm))
                       for param_name, _ in module.named_parameters(recurse=False)}
        checked = 0
        for param_name, param in model.named_parameters():
            if not param.requires_grad:  # frozen (ResT's stem and stage 1): in no group that updates it
                continue
            expected = released_decay(param_name, recipe.weight_decay, recipe.rules,
                                      is_norm=(param_name in norm_params) if is_rest else None)
            # mmengine's decay_mult times the weight decay against ours: one float64 product each
            assert ours[id(param)] == pytest.approx((recipe.lr, expected), rel=two_implementations(torch.float64, 1)), \
                f'{name}: {param_name}'
            checked += 1
        assert checked > 0


def _simulated_lrs(cfg, iters_per_epoch: int, total_iters: int) -> np.ndarray:
    """The lr of each iteration under the config's param_scheduler, stepped
    as mmengine's ParamSchedulerHook steps it (iteration-based ones after
    every iteration, epoch-based ones after every epoch)."""
    optimizer = torch.optim.AdamW([torch.zeros(1, requires_grad=True)], lr=cfg.optim_wrapper.optimizer.lr)
    schedulers = [PARAM_SCHEDULERS.build({**scheduler, 'optimizer': optimizer}) for scheduler in cfg.param_scheduler]
    lrs = np.empty(total_iters)
    for iteration in range(total_iters):
        lrs[iteration] = optimizer.param_groups[0]['lr']
        for scheduler in schedulers:
            if not scheduler.by_epoch:
                scheduler.step()
        if (iteration + 1) % iters_per_epoch == 0:
            for scheduler in schedulers:
                if scheduler.by_epoch:
                    scheduler.step()
    return lrs


def _schedule_examples() -> List[str]:
    """One config per distinct (schedule, lr) of the table."""
    seen, names = set(), []
    for name, recipe in sorted(RELEASED_RECIPES.items()):
        if (recipe.schedule, recipe.lr) not in seen:
            seen.add((recipe.schedule, recipe.lr))
            names.append(name)
    return names


@pytest.mark.parametrize('name', _schedule_examples())
def test_lr_at_every_iteration_is_the_released_one(name: str):
    recipe, cfg = RELEASED_RECIPES[name], load_config(CONFIGS[name])
    init_default_scope(cfg.default_scope)
    schedule = recipe.schedule
    # epochs shortened to 700 iterations (more than the 500-iteration warm-up) to keep this quick
    iters_per_epoch = 700 if schedule.policy == 'step' else schedule.length
    total = schedule.length * iters_per_epoch if schedule.policy == 'step' else schedule.length
    if schedule.policy == 'step':
        assert cfg.train_cfg.max_epochs == schedule.length
    else:
        assert cfg.train_cfg.max_iters == schedule.length
    expected = np.array([released_lr(schedule, recipe.lr, i, iters_per_epoch) for i in range(total)])
    # every iteration's lr is the last one's times a rounded factor: the errors of ``total`` chained iterations
    # add at most linearly (Higham's gamma_n of a product of n rounded factors), relative to the base lr
    tolerance = ROUNDINGS_PER_ITERATION * total * unit_roundoff(torch.float64)
    assert_close(torch.from_numpy(_simulated_lrs(cfg, iters_per_epoch, total)), torch.from_numpy(expected),
                 tolerance, recipe.lr)


def _types(pipeline) -> List[str]:
    return [transform['type'] for transform in pipeline]


def _shorter_longer(scales) -> List[tuple]:
    """Resize scales as (shorter, longer): mmcv rescales to fit both, in either order."""
    return sorted(tuple(sorted(scale)) for scale in scales)


@pytest.mark.parametrize('name', sorted(RELEASED_RECIPES))
def test_pipelines_are_the_released_ones(name: str):
    cfg, recipe = load_config(CONFIGS[name]), RELEASED_RECIPES[name]
    train, test = cfg.train_dataloader.dataset.pipeline, cfg.test_dataloader.dataset.pipeline
    if recipe.pipeline == 'ade20k':  # mmseg 0.x ade20k(_uper).py in mmseg 1.x form
        assert _types(train) == ['LoadImageFromFile', 'LoadAnnotations', 'RandomResize', 'RandomCrop', 'RandomFlip',
                                 'PhotoMetricDistortion', 'PackSegInputs']
        assert (train[2].scale, train[2].ratio_range, train[3].crop_size, train[3].cat_max_ratio) == \
            ((2048, 512), (0.5, 2.0), (512, 512), 0.75)
        assert test[1].type == 'Resize' and test[1].scale == (2048, 512) and test[1].keep_ratio
        return
    assert test[1].type == 'Resize' and test[1].scale == (1333, 800) and test[1].keep_ratio  # every released test
    body = train[2:-1]
    assert _types(train[:2]) == ['LoadImageFromFile', 'LoadAnnotations'] and train[-1].type == 'PackDetInputs'
    if recipe.pipeline == 'coco_1x':
        assert _types(body) == ['Resize', 'RandomFlip'] and body[0].scale == (1333, 800) and body[1].prob == 0.5
    elif recipe.pipeline == 'detr_aug':
        flip, choice = body
        assert (flip.type, flip.prob, choice.type, choice.get('prob')) == ('RandomFlip', 0.5, 'RandomChoice', None)
        assert len(choice.transforms) == len(DETR_POLICIES)
        for ours, released in zip(choice.transforms, DETR_POLICIES):
            assert len(ours) == len(released)
            for transform, (kind, settings) in zip(ours, released):
                if kind == 'Resize':
                    assert transform.type == 'RandomChoiceResize' and transform.keep_ratio
                    assert _shorter_longer(transform.scales) == _shorter_longer(settings['scales'])
                else:
                    assert transform.type == kind
                    assert {key: transform[key] for key in settings} == settings
    else:  # detectron2: [RandomCrop (Mask R-CNN),] ResizeShortestEdge (choice), RandomFlip
        crop = [dict(type='RandomCrop', crop_type='relative', crop_size=(0.9, 0.9), recompute_bbox=True)]
        assert body[:-2] == (crop if recipe.pipeline == 'd2_crop_ms' else [])
        resize, flip = body[-2:]
        assert resize.type == 'RandomChoiceResize' and resize.keep_ratio
        assert _shorter_longer(resize.scales) == _shorter_longer(D2_SCALES)
        assert (flip.type, flip.prob) == ('RandomFlip', 0.5)


@pytest.mark.parametrize('name', ['mask-rcnn_rmt-t_fpn_ms-3x_coco', 'mask-rcnn_rest-small_fpn_ms-1x_coco'])
def test_augmentation_runs_and_gives_the_released_sizes(name: str):
    """The 3x crop branch and the detectron2 crop run in mmdet 3.x on an
    image with boxes and masks, and every output has a released size."""
    from mmdet.structures.bbox import HorizontalBoxes
    from mmdet.structures.mask import BitmapMasks
    cfg, recipe = load_config(CONFIGS[name]), RELEASED_RECIPES[name]
    init_default_scope('mmdet')
    transforms = [TRANSFORMS.build(t) for t in cfg.train_dataloader.dataset.pipeline[2:-1]]
    shorter_sides = {scale[0] for scale in (D2_SCALES if recipe.pipeline.startswith('d2') else
                                            DETR_POLICIES[0][0][1]['scales'])}
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(30):
        masks = np.zeros((2, 480, 640), dtype=np.uint8)
        masks[0, 100:300, 100:400] = masks[1, 50:450, 300:600] = 1
        results = dict(img=rng.integers(0, 255, (480, 640, 3), dtype=np.uint8), img_shape=(480, 640),
                       ori_shape=(480, 640),
                       gt_bboxes=HorizontalBoxes(np.array([[100, 100, 400, 300], [300, 50, 600, 450]],
                                                          dtype=np.float32)),
                       gt_bboxes_labels=np.array([0, 1]), gt_ignore_flags=np.array([False, False]),
                       gt_masks=BitmapMasks(masks, 480, 640))
        for transform in transforms:
            results = transform(results)
            if results is None:  # RandomCrop found no box in its window: the dataset would try another image
                break
        if results is None:
            continue
        height, width = results['img'].shape[:2]
        assert min(height, width) in shorter_sides or max(height, width) == 1333
        assert results['gt_masks'].masks.shape[1:] == (height, width)
        seen.add(min(height, width))
    assert len(seen) > 2  # the resize draws several sizes
