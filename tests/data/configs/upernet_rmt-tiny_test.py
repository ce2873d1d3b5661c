# The demo UperNet with a tiny RMT and 64 px images, a few iterations long.
_base_ = ['../../../configs/demo/upernet_rmt-t_demo.py', './_tiny_rmt.py']

crop_size = (64, 64)
model = dict(
    data_preprocessor=dict(size=crop_size),
    backbone=dict(arch={{_base_.tiny_rmt}}),
    decode_head=dict(in_channels={{_base_.tiny_channels}}, channels=16),
    auxiliary_head=dict(in_channels=64, channels=16))

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', reduce_zero_label=True),
    dict(type='Resize', scale=crop_size, keep_ratio=True),
    dict(type='PackSegInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=crop_size, keep_ratio=True),
    dict(type='LoadAnnotations', reduce_zero_label=True),
    dict(type='PackSegInputs'),
]
max_iters = 4
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
train_dataloader = dict(batch_size=2, num_workers=0, persistent_workers=False,
                        dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(num_workers=0, persistent_workers=False,
                      dataset=dict(pipeline=test_pipeline, indices=8))
test_dataloader = val_dataloader
param_scheduler = [dict(type='LinearLR', start_factor=0.5, by_epoch=False, begin=0, end=max_iters)]
default_hooks = dict(logger=dict(interval=1), checkpoint=dict(interval=2))
randomness = dict(seed=0, deterministic=True)
