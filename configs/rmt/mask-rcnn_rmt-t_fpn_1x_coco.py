# Mask R-CNN 1x with RMT-T (RMT paper, Table 2), as the authors' released
# maskrcnn_t_1x.py (schedule: rmt_det_adamw_1x.py).
_base_ = [
    'mmdet::_base_/models/mask-rcnn_r50_fpn.py', '../_base_/datasets/coco_instance.py',
    '../_base_/schedules/rmt_det_adamw_1x.py',
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
