# The ResT authors' detectron2 schedule (object_detection/configs/Base-*.yaml
# and ResTv1/*.yaml, with detectron2's defaults): AdamW (betas 0.9/0.999) lr
# 1e-4, weight decay 0.05 except on norm layers (WEIGHT_DECAY_NORM 0), batch
# 16, 90k iterations (about 12.3 COCO epochs) with lr x0.1 at 60k and 80k,
# linear warm-up over 1000 iterations from x0.001; a checkpoint every 5000
# iterations, evaluation at the end (TEST.EVAL_PERIOD 0). It holds mmdet's
# default runtime too, whose checkpoint and log settings it changes to
# iterations.
_base_ = ['./det_adamw_1x.py', 'mmdet::_base_/default_runtime.py']

max_iters = 90000
train_cfg = dict(_delete_=True, type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
optim_wrapper = dict(paramwise_cfg=dict(_delete_=True, norm_decay_mult=0.))
# mmengine's LinearLR and PolyLR reach their end one step before `end`; each
# `end` here is one past detectron2's length, so every iteration gets detectron2's lr.
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=1001),
    dict(type='MultiStepLR', begin=0, end=max_iters, by_epoch=False, milestones=[60000, 80000], gamma=0.1)
]
default_hooks = dict(checkpoint=dict(by_epoch=False, interval=5000))
log_processor = dict(by_epoch=False)
