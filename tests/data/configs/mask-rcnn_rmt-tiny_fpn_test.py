# The demo Mask R-CNN with a tiny RMT and 64 px images, a few iterations long,
# deterministic and single-process-friendly (no dataloader workers).
_base_ = ['../../../configs/demo/mask-rcnn_rmt-t_fpn_demo.py', './_tiny_rmt.py']

fpn_channels = 32
model = dict(
    backbone=dict(arch={{_base_.tiny_rmt}}),
    neck=dict(in_channels={{_base_.tiny_channels}}, out_channels=fpn_channels),
    rpn_head=dict(in_channels=fpn_channels, feat_channels=fpn_channels),
    roi_head=dict(
        bbox_roi_extractor=dict(out_channels=fpn_channels),
        bbox_head=dict(in_channels=fpn_channels, fc_out_channels=32),
        mask_roi_extractor=dict(out_channels=fpn_channels),
        mask_head=dict(num_convs=1, in_channels=fpn_channels, conv_out_channels=fpn_channels)))

image_scale = (64, 64)
# the demo set's pipelines at this scale, the training one without flips
resize = dict(type='Resize', scale=image_scale, keep_ratio=True)
train_pipeline = [
    dict(type='LoadImageFromFile'), {{_base_.demo_annotations}}, resize, dict(type='PackDetInputs')]
test_pipeline = [
    dict(type='LoadImageFromFile'), resize, {{_base_.demo_annotations}}, {{_base_.demo_test_packing}}]
max_iters = 4
train_cfg = dict(max_iters=max_iters, val_interval=max_iters)
train_dataloader = dict(batch_size=2, num_workers=0, persistent_workers=False,
                        dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(batch_size=4, num_workers=0, persistent_workers=False,
                      dataset=dict(pipeline=test_pipeline, indices=8))
test_dataloader = val_dataloader
param_scheduler = [dict(type='LinearLR', start_factor=0.5, by_epoch=False, begin=0, end=max_iters)]
default_hooks = dict(logger=dict(interval=1), checkpoint=dict(interval=2))
randomness = dict(seed=0, deterministic=True)
