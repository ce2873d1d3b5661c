# Mask R-CNN 1x with ResT-Small, the ResT paper's recipe (its Table 4): AdamW,
# lr 1e-4, weight decay 0.05, batch 16, shorter side 480-800 (the authors'
# detectron2 configs draw 640-800).
_base_ = [
    'mmdet::_base_/models/mask-rcnn_r50_fpn.py', '../_base_/datasets/coco_instance_ms-480-800.py',
    '../_base_/schedules/det_adamw_1x.py',
    'mmdet::_base_/default_runtime.py', '../_base_/mmrmt_runtime.py'
]

model = dict(
    backbone=dict(
        _delete_=True,
        type='ResT',
        arch='small',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rest-small_in1k.pth')),
    neck=dict(in_channels=[64, 128, 256, 512]))
