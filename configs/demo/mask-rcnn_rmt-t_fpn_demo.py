# RMT-T Mask R-CNN trained from scratch on the synthetic demo set, sized to
# reach a useful mAP in a few minutes on a CPU: plain BN, 128 px images,
# slim FPN and heads, few proposals, AdamW with warm-up.
_base_ = [
    'mmdet::_base_/models/mask-rcnn_r50_fpn.py',
    '../_base_/datasets/demo_coco_instance.py',
    'mmdet::_base_/default_runtime.py', '../_base_/mmrmt_runtime.py',
]

fpn_channels = 128
num_classes = 3
model = dict(
    backbone=dict(_delete_=True, type='RMT', arch='t', drop_path_rate=0.0,
                  norm_cfg=dict(type='BN', requires_grad=True)),
    neck=dict(in_channels=[64, 128, 256, 512], out_channels=fpn_channels),
    rpn_head=dict(in_channels=fpn_channels, feat_channels=fpn_channels,
                  anchor_generator=dict(scales=[6])),
    roi_head=dict(
        bbox_roi_extractor=dict(roi_layer=dict(sampling_ratio=2), out_channels=fpn_channels),
        bbox_head=dict(in_channels=fpn_channels, fc_out_channels=256, num_classes=num_classes),
        mask_roi_extractor=dict(roi_layer=dict(sampling_ratio=2), out_channels=fpn_channels),
        mask_head=dict(num_convs=2, in_channels=fpn_channels, conv_out_channels=fpn_channels,
                       num_classes=num_classes)),
    train_cfg=dict(
        rpn_proposal=dict(nms_pre=500, max_per_img=100),
        rcnn=dict(sampler=dict(num=64))),
    test_cfg=dict(
        rpn=dict(nms_pre=300, max_per_img=100),
        rcnn=dict(max_per_img=20)))

max_iters = 300
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters, val_interval=max_iters)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
train_dataloader = dict(sampler=dict(type='InfiniteSampler', shuffle=True))

optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=1e-3, betas=(0.9, 0.999), weight_decay=0.05),
    clip_grad=dict(max_norm=10.0))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.01, by_epoch=False, begin=0, end=50),
    dict(type='CosineAnnealingLR', by_epoch=False, begin=50, end=max_iters, eta_min=1e-5),
]

default_hooks = dict(
    logger=dict(type='LoggerHook', interval=10),
    checkpoint=dict(type='CheckpointHook', by_epoch=False, interval=max_iters))
log_processor = dict(by_epoch=False)
# Seeded as upernet_rmt-t_demo.py (see there for deterministic).
randomness = dict(seed=0, deterministic=False)
