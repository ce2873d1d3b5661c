# Cascade Mask R-CNN 3x+MS with RMT-T (the RMT paper reports S and B, Table 4).
_base_ = [
    '../_base_/models/cascade-mask-rcnn_r50_fpn_4conv1fc-giou.py',
    '../_base_/datasets/coco_instance_ms-480-800.py',
    '../_base_/schedules/det_adamw_3x.py',
    'mmdet::_base_/default_runtime.py', '../_base_/mmrmt_runtime.py'
]

model = dict(
    backbone=dict(
        _delete_=True,
        type='RMT',
        arch='t',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rmt-t_in1k.pth')),
    neck=dict(in_channels=[64, 128, 256, 512]))
