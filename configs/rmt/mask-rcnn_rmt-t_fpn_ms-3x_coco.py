# Mask R-CNN 3x+MS with RMT-T (the RMT paper reports S and B, Table 3), as the
# authors' released maskrcnn_s_3x.py (no T file: lr 4e-4 as in all their T and S
# configs); the DETR-style multi-scale crop augmentation of their 3x configs.
_base_ = [
    'mmdet::_base_/models/mask-rcnn_r50_fpn.py', '../_base_/datasets/coco_instance_detr-aug.py',
    '../_base_/schedules/rmt_det_adamw_3x.py',
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
