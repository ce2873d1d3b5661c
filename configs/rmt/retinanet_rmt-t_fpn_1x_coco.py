# RetinaNet 1x with RMT-T (RMT paper, Table 2). Stages 2-4 feed the FPN,
# which adds P6/P7 from its input (as mmdet's Swin RetinaNet).
_base_ = [
    'mmdet::_base_/models/retinanet_r50_fpn.py', '../_base_/datasets/coco_detection.py',
    '../_base_/schedules/det_adamw_1x.py',
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

optim_wrapper = dict(optimizer=dict(weight_decay=1e-4))
