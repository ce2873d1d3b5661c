# Semantic FPN on ADE20K as the RMT authors trained it
# (segmentation/configs/RMT/RMT_FPN_*_1x.py on their schedule_80k.py, after
# PVT): AdamW lr 1e-4, weight decay 1e-4 on every parameter (no
# paramwise_cfg), poly decay (power 0.9) to 1e-6 over 80k iterations, no
# warm-up; evaluation and a checkpoint every 4000 iterations, the last one
# kept as the result.
_base_ = 'mmseg::_base_/schedules/schedule_80k.py'

optim_wrapper = dict(optimizer=dict(_delete_=True, type='AdamW', lr=1e-4, betas=(0.9, 0.999), weight_decay=1e-4))
# mmengine's LinearLR and PolyLR reach their end one step before `end`; each
# `end` here is one past mmcv's length, so every iteration gets mmcv's lr.
param_scheduler = [dict(type='PolyLR', eta_min=1e-6, power=0.9, begin=0, end=80001, by_epoch=False)]
train_cfg = dict(val_interval=4000)
default_hooks = dict(checkpoint=dict(interval=4000))

# The learning rates assume batches of 16 images; tools/train.py
# --auto-scale-lr rescales them to the batch size of the run (as mmdet's schedules).
auto_scale_lr = dict(enable=False, base_batch_size=16)
