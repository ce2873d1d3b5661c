# RMT-T UperNet trained from scratch on the synthetic demo scenes (128 px),
# sized for a few minutes on a CPU: plain BN, slim heads, AdamW with warm-up.
_base_ = [
    'mmseg::_base_/models/upernet_r50.py',
    '../_base_/datasets/demo_ade.py',
    'mmseg::_base_/default_runtime.py', '../_base_/mmrmt_runtime.py',
    'mmseg::_base_/schedules/schedule_20k.py',
]

norm_cfg = dict(type='BN', requires_grad=True)
num_classes = 5
model = dict(
    data_preprocessor=dict(size=(128, 128)),
    pretrained=None,
    backbone=dict(_delete_=True, type='RMT', arch='t', drop_path_rate=0.0, norm_cfg=norm_cfg),
    decode_head=dict(in_channels=[64, 128, 256, 512], channels=128, num_classes=num_classes,
                     norm_cfg=norm_cfg),
    auxiliary_head=dict(in_channels=256, channels=64, num_classes=num_classes, norm_cfg=norm_cfg))

max_iters = 300
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
optim_wrapper = dict(
    _delete_=True,
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=1e-3, betas=(0.9, 0.999), weight_decay=0.05),
    clip_grad=dict(max_norm=10.0))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.01, by_epoch=False, begin=0, end=30),
    dict(type='CosineAnnealingLR', by_epoch=False, begin=30, end=max_iters, eta_min=1e-5),
]
default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(interval=max_iters))
# The same seed, same results: on the CPU two runs of this config give the
# same weights and mIoU. deterministic=True would in addition make CUDA
# kernels deterministic, but there UperNet's pooling module has none for its
# backward pass (torch would refuse it).
randomness = dict(seed=0, deterministic=False)
