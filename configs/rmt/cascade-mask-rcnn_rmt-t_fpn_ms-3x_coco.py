# Cascade Mask R-CNN 3x+MS with RMT-T (the RMT paper reports S and B, Table 4),
# as the authors' released casrcnn_s_3x.py (no T file: lr 4e-4 as in all their
# T and S configs). Their cascade configs also exempt every norm layer from
# weight decay (norm_decay_mult=0: the stem's BN and the box heads' BN too).
_base_ = [
    '../_base_/models/cascade-mask-rcnn_r50_fpn_4conv1fc-giou.py',
    '../_base_/datasets/coco_instance_detr-aug.py',
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

optim_wrapper = dict(paramwise_cfg=dict(norm_decay_mult=0.))
