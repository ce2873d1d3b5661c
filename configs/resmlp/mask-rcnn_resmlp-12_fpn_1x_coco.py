# Mask R-CNN 1x with ResMLP-12 (no paper number), the RMT recipe: AdamW,
# lr 1e-4, weight decay 0.05. The stride-4 level's norm is SyncBN.
_base_ = [
    'mmdet::_base_/models/mask-rcnn_r50_fpn.py', '../_base_/datasets/coco_instance.py',
    '../_base_/schedules/det_adamw_1x.py',
    'mmdet::_base_/default_runtime.py', '../_base_/mmrmt_runtime.py'
]

model = dict(
    backbone=dict(
        _delete_=True,
        type='ResMLP',
        arch='12',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/resmlp-12_in1k.pth')),
    neck=dict(in_channels=[384, 384, 384, 384]))
