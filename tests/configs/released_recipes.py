"""The training recipes the backbones' authors released, as data.

Written from the authors' files, not from our configs: the RMT authors'
mmdet 2.11 / mmseg 0.13 configs (github.com/qhfan/RMT,
``detect/configs/RMT/*.py``, ``segmentation/configs/RMT/*.py`` and the
``_base_`` files they inherit) and the ResT authors' detectron2 configs
(github.com/wofmanaf/ResT, ``object_detection/configs/Base-*.yaml``,
``ResTv1/*.yaml``, ``restv2/config.py`` and detectron2's defaults). Where
no file exists for one of our configs (RMT-T Mask R-CNN 3x, RMT-T/L Cascade,
RMT-T UperNet, the 160k Semantic FPN, ResT-Large) or the file cannot run
(``RMT_Uper_s_2x.py`` / ``RMT_Uper_m_2x.py`` divide by ``gpu_multipliers //
2``, which is 0), the entry says from which released values it is derived.

Each weight-decay rule set is a released ``paramwise_cfg`` as mmcv 1.x's
``DefaultOptimizerConstructor`` reads it (see :func:`released_decay`).
"""
import re
from typing import Dict, NamedTuple, Optional, Tuple, Union

# --- paramwise_cfg of the released files ---------------------------------------
NO_RULES = None  # no paramwise_cfg: every parameter decays
RCNN_RULES = dict(custom_keys={'absolute_pos_embed': 0., 'relative_position_bias_table': 0., 'norm': 0.})
CASCADE_RULES = dict(norm_decay_mult=0., custom_keys={'absolute_pos_embed': 0., 'relative_position_bias_table': 0.,
                                                      'rpe_table': 0., 'norm': 0.})
DETECTRON2_RULES = dict(norm_decay_mult=0.)  # SOLVER.WEIGHT_DECAY_NORM 0, WEIGHT_DECAY_BIAS = WEIGHT_DECAY


class Schedule(NamedTuple):
    """An mmcv 1.x ``lr_config`` (or detectron2 solver) in numbers.

    Args:
        policy (str): 'step' (epoch steps), 'iter_step' (iteration steps) or 'poly'.
        length (int): Epochs ('step') or iterations.
        steps (tuple): Where the lr drops x0.1 (epochs or iterations).
        power (float): Poly power.
        min_lr (float): Poly floor.
        warmup_iters (int): Linear warm-up length (0: none).
        warmup_ratio (float): Warm-up start factor.
    """
    policy: str
    length: int
    steps: Tuple[int, ...] = ()
    power: float = 1.
    min_lr: float = 0.
    warmup_iters: int = 0
    warmup_ratio: float = 1.


STEP_1X = Schedule('step', 12, (8, 11), warmup_iters=500, warmup_ratio=1e-3)  # schedule_1x.py
STEP_3X = Schedule('step', 36, (27, 33), warmup_iters=500, warmup_ratio=1e-3)  # *_3x.py lr_config
FPN_80K = Schedule('poly', 80000, power=0.9, min_lr=1e-6)  # seg schedule_80k.py
FPN_160K = Schedule('poly', 160000, power=0.9, min_lr=1e-6)  # derived: the 80k one over 160k
UPER_160K = Schedule('poly', 160000, power=1.0, min_lr=0., warmup_iters=1500, warmup_ratio=1e-6)
D2_90K = Schedule('iter_step', 90000, (60000, 80000), warmup_iters=1000, warmup_ratio=1e-3)

# --- training pipelines -----------------------------------------------------------
DETR_SCALES = tuple((short, 1333) for short in range(480, 801, 32))  # (480, 1333) ... (800, 1333)
#: detect/configs/RMT/*_3x.py: AutoAugment policies, each a list of (transform, settings).
DETR_POLICIES = (
    (('Resize', dict(scales=DETR_SCALES)), ),
    (('Resize', dict(scales=((400, 1333), (500, 1333), (600, 1333)))),
     ('RandomCrop', dict(crop_type='absolute_range', crop_size=(384, 600), allow_negative_crop=True)),
     ('Resize', dict(scales=DETR_SCALES))),
)
D2_SCALES = tuple((short, 1333) for short in (640, 672, 704, 736, 768, 800))  # MIN_SIZE_TRAIN, MAX_SIZE_TRAIN


class Recipe(NamedTuple):
    """One released training recipe.

    Args:
        source (str): The released file, or how the values were derived.
        lr (float): AdamW's lr (betas 0.9/0.999 in every file).
        weight_decay (float): AdamW's weight decay.
        rules (dict, optional): The weight-decay paramwise_cfg (see above).
        images_per_gpu (int): ``samples_per_gpu`` / detectron2's batch / 8.
        schedule (Schedule): The lr schedule.
        pipeline (str): 'coco_1x' (shorter side 800), 'detr_aug', 'd2_ms',
            'd2_crop_ms' or 'ade20k'.
        loss_scale (float | str, optional): fp16 loss scale, None for fp32.
        drop_path_rate (float): The backbone's stochastic depth.
        eval_interval (int, optional): Iterations between evaluations (seg).
        save_best (str, optional): The metric whose best checkpoint is kept.
        clip_grad (float, optional): Max gradient norm of the whole model.
        frozen_stages (int): mmrmt's equivalent of detectron2's FREEZE_AT.
    """
    source: str
    lr: float
    weight_decay: float
    rules: Optional[dict]
    images_per_gpu: int
    schedule: Schedule
    pipeline: str
    loss_scale: Union[float, str, None]
    drop_path_rate: float
    eval_interval: Optional[int] = None
    save_best: Optional[str] = None
    clip_grad: Optional[float] = None
    frozen_stages: int = -1


TOTAL_BATCH = 16  # the papers' batch; the released files leave the GPU count open
DROP_PATH = {'t': 0.1, 's': 0.15, 'b': 0.4, 'l': 0.5}  # drop_path_rate of every released RMT file
UPSTREAM_NAME = {'t': 't', 's': 's', 'b': 'm', 'l': 'l'}  # their RMT-M is our RMT-B


def _rmt_recipes() -> Dict[str, Recipe]:
    recipes = {}
    for v in 'tsbl':
        up = UPSTREAM_NAME[v]
        recipes[f'retinanet_rmt-{v}_fpn_1x_coco'] = Recipe(
            f'retinanet_{up}_1x.py', 2e-4 if v == 'l' else 4e-4, 1e-4, NO_RULES, 2, STEP_1X, 'coco_1x', 512.,
            DROP_PATH[v])
        recipes[f'mask-rcnn_rmt-{v}_fpn_1x_coco'] = Recipe(
            f'maskrcnn_{up}_1x.py', 2e-4 if v == 'l' else 4e-4, 0.05, RCNN_RULES, 2, STEP_1X, 'coco_1x',
            'dynamic', DROP_PATH[v])
        recipes[f'mask-rcnn_rmt-{v}_fpn_ms-3x_coco'] = Recipe(
            'maskrcnn_s_3x.py with lr 4e-4 as every T config' if v == 't' else f'maskrcnn_{up}_3x.py',
            4e-4 if v in 'ts' else 2e-4, 0.05, RCNN_RULES, 1 if v == 'l' else 2, STEP_3X, 'detr_aug', 'dynamic',
            DROP_PATH[v])
        recipes[f'cascade-mask-rcnn_rmt-{v}_fpn_ms-3x_coco'] = Recipe(
            {'t': 'casrcnn_s_3x.py (lr 4e-4 as every T config)',
             'l': "casrcnn_m_3x.py with maskrcnn_l_3x.py's lr 2e-4 and 1 image a GPU"}.get(v, f'casrcnn_{up}_3x.py'),
            4e-4 if v in 'ts' else 2e-4, 0.05, CASCADE_RULES, 1 if v == 'l' else 2, STEP_3X, 'detr_aug', 'dynamic',
            DROP_PATH[v])
        recipes[f'fpn_rmt-{v}_8xb2-80k_ade20k-512x512'] = Recipe(
            f'RMT_FPN_{up}_1x.py', 1e-4, 1e-4, NO_RULES, 2, FPN_80K, 'ade20k', None, DROP_PATH[v],
            eval_interval=4000)
        recipes[f'fpn_rmt-{v}_8xb2-160k_ade20k-512x512'] = Recipe(
            f'RMT_FPN_{up}_1x.py over 160k iterations', 1e-4, 1e-4, NO_RULES, 2, FPN_160K, 'ade20k', None,
            DROP_PATH[v], eval_interval=4000)
        recipes[f'upernet_rmt-{v}_8xb2-160k_ade20k-512x512'] = Recipe(
            # S and M divide by zero as released; L (1500 // 1, 8000 // 1) gives the values they mean
            'RMT_Uper_s_2x.py, intervals as RMT_Uper_l_2x.py' if v in 'ts' else f'RMT_Uper_{up}_2x.py',
            6e-5, 0.01, RCNN_RULES, 2, UPER_160K, 'ade20k', 512., DROP_PATH[v], eval_interval=8000,
            save_best='mIoU')
    return recipes


def _rest_recipes() -> Dict[str, Recipe]:
    recipes = {}
    for v, drop_path in (('small', 0.1), ('base', 0.2), ('large', 0.2)):  # restv2/rest.py build_rest_backbone
        source = f'mask_rcnn_rest_{v}_FPN_1x.yaml' if v != 'large' else 'the Small/Base yaml files'
        recipes[f'mask-rcnn_rest-{v}_fpn_ms-1x_coco'] = Recipe(
            source, 1e-4, 0.05, DETECTRON2_RULES, 2, D2_90K, 'd2_crop_ms', None, drop_path, clip_grad=0.01,
            frozen_stages=1)
        recipes[f'retinanet_rest-{v}_fpn_ms-1x_coco'] = Recipe(
            source.replace('mask_rcnn', 'retinanet'), 1e-4, 0.05, DETECTRON2_RULES, 2, D2_90K, 'd2_ms', None,
            drop_path, frozen_stages=1)
    return recipes


RELEASED_RECIPES: Dict[str, Recipe] = {**_rmt_recipes(), **_rest_recipes()}

# Parameters of the upstream models' norm layers (mmcv's ``is_norm``): the
# RMT stem's and downsampling BN, its LayerNorms, and mmcv ConvModules' ``bn``.
_UPSTREAM_NORM = re.compile(r'.*(patch_embed\.proj\.(1|4|7|10)|retention_layer_norm|final_layer_norm|'
                            r'downsample\.norm|extra_norms\.\d+|\.bn)\.(weight|bias)')


def released_decay(name: str, base_wd: float, rules: Optional[dict], is_norm: Optional[bool] = None) -> float:
    """Weight decay of parameter ``name`` under a released paramwise_cfg.

    mmcv 1.x ``DefaultOptimizerConstructor.add_params``: the longest custom
    key (ties alphabetically) contained in the parameter's full name sets its
    decay; otherwise a norm layer's parameter gets ``norm_decay_mult``.
    detectron2's WEIGHT_DECAY_NORM is the same rule without keys.

    Args:
        name (str): The parameter's name in the model (upstream names: the
            RMT models keep them, see mmrmt.checkpoint.upstream_trained).
        base_wd (float): The optimizer's weight decay.
        rules (dict, optional): ``custom_keys`` (key -> decay_mult) and
            ``norm_decay_mult``; None: every parameter decays.
        is_norm (bool, optional): Whether its module is a norm layer; None:
            decided from the upstream RMT models' names.
    """
    if rules is None:
        return base_wd
    keys = rules.get('custom_keys', {})
    for key in sorted(sorted(keys), key=len, reverse=True):
        if key in name:
            return base_wd * keys[key]
    if is_norm is None:
        is_norm = _UPSTREAM_NORM.fullmatch(name) is not None
    return base_wd * rules.get('norm_decay_mult', 1.) if is_norm else base_wd


def released_lr(schedule: Schedule, base_lr: float, iteration: int, iters_per_epoch: int) -> float:
    """The released lr at ``iteration`` (0-based), as mmcv 1.x's
    LrUpdaterHook (and detectron2's WarmupMultiStepLR) computes it: the
    regular lr (epoch steps, iteration steps or poly), times the linear
    warm-up factor ``1 - (1 - i / warmup_iters) * (1 - warmup_ratio)`` while
    warming up."""
    if schedule.policy == 'poly':
        regular = (base_lr - schedule.min_lr) * (1 - iteration / schedule.length) ** schedule.power + schedule.min_lr
    else:
        progress = iteration // iters_per_epoch if schedule.policy == 'step' else iteration
        regular = base_lr * 0.1 ** sum(progress >= step for step in schedule.steps)
    if iteration < schedule.warmup_iters:
        return regular * (1 - (1 - iteration / schedule.warmup_iters) * (1 - schedule.warmup_ratio))
    return regular
