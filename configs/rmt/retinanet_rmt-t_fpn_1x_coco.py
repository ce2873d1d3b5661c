# RetinaNet 1x with RMT-T (RMT paper, Table 2), as the authors' released
# retinanet_t_1x.py: AdamW lr 4e-4 and weight decay 1e-4 on every parameter
# (no paramwise_cfg), fp16 with a static loss scale of 512. Stages 2-4 feed
# the FPN, which adds P6/P7 from its input (as mmdet's Swin RetinaNet).
_base_ = [
    'mmdet::_base_/models/retinanet_r50_fpn.py', '../_base_/datasets/coco_detection.py',
    '../_base_/schedules/rmt_det_adamw_1x.py',
    'mmdet::_base_/default_runtime.py', '../_base_/mmrmt_runtime.py'
]

model = dict(
    backbone=dict(
        _delete_=True,
        type='RMT',
        arch='t',
        drop_path_rate=0.1,
        out_indices=(1, 2, 3),
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rmt-t_in1k.pth')),
    neck=dict(in_channels=[128, 256, 512], start_level=0))

optim_wrapper = dict(optimizer=dict(weight_decay=1e-4), paramwise_cfg=None)
amp_loss_scale = 512.
