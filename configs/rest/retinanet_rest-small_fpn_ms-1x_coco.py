# RetinaNet 1x with ResT-Small, the ResT paper's recipe (its Table 3): AdamW,
# lr 1e-4, weight decay 0.05, batch 16, shorter side 480-800 (the authors'
# detectron2 configs draw 640-800). Stages 2-4 feed the FPN, as upstream.
_base_ = [
    'mmdet::_base_/models/retinanet_r50_fpn.py', '../_base_/datasets/coco_detection_ms-480-800.py',
    '../_base_/schedules/det_adamw_1x.py',
    'mmdet::_base_/default_runtime.py', '../_base_/mmrmt_runtime.py'
]

model = dict(
    backbone=dict(
        _delete_=True,
        type='ResT',
        arch='small',
        drop_path_rate=0.1,
        out_indices=(1, 2, 3),
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rest-small_in1k.pth')),
    neck=dict(in_channels=[128, 256, 512], start_level=0))
