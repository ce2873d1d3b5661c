# UperNet on ADE20K as the RMT authors trained it
# (segmentation/configs/RMT/RMT_Uper_*_2x.py, after Swin / UniFormer):
# AdamW lr 6e-5, weight decay 0.01, linear decay ("poly", power 1) from lr to
# 0 over 160k iterations, multiplied during the first 1500 by a linear
# warm-up from x1e-6 (mmcv's warm-up scales the decayed lr: both schedulers
# run from iteration 0); evaluation and a checkpoint every 8000 iterations,
# the best mIoU kept. For ResT and ResMLP (no released UperNet) no decay on
# norm layers, ResMLP's Affine norms and layer scales; RMT's configs set the
# authors' paramwise_cfg instead.
_base_ = 'mmseg::_base_/schedules/schedule_160k.py'

optim_wrapper = dict(
    optimizer=dict(_delete_=True, type='AdamW', lr=6e-5, betas=(0.9, 0.999), weight_decay=0.01),
    paramwise_cfg=dict(
        norm_decay_mult=0.,
        custom_keys={
            '.ls1': dict(decay_mult=0.), '.ls2': dict(decay_mult=0.),
            '.alpha': dict(decay_mult=0.), '.beta': dict(decay_mult=0.)
        }))
# mmengine's LinearLR and PolyLR reach their end one step before `end`; each
# `end` here is one past mmcv's length, so every iteration gets mmcv's lr.
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-6, by_epoch=False, begin=0, end=1501),
    dict(type='PolyLR', eta_min=0., power=1.0, begin=0, end=160001, by_epoch=False)
]
train_cfg = dict(val_interval=8000)
default_hooks = dict(checkpoint=dict(interval=8000, max_keep_ckpts=1, save_best='mIoU', rule='greater'))
auto_scale_lr = dict(enable=False, base_batch_size=16)
