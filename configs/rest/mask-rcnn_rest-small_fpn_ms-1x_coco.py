# Mask R-CNN with ResT-Small (ResT paper, Table 4), as the authors'
# detectron2 config (object_detection/configs/ResTv1/mask_rcnn_rest_small_FPN_1x.yaml
# on Base-RCNN-FPN.yaml): AdamW lr 1e-4, weight decay 0.05, batch 16, 90k
# iterations (det_adamw_90k.py), a 0.9 x 0.9 random crop then the shorter side
# one of 640-800 (the paper's text says 480-800 and no crop), the whole
# model's gradient norm clipped at 0.01, stem and stage 1 frozen
# (FREEZE_AT=2), fp32.
_base_ = [
    'mmdet::_base_/models/mask-rcnn_r50_fpn.py', '../_base_/datasets/coco_instance_crop-ms-640-800.py',
    '../_base_/schedules/det_adamw_90k.py', '../_base_/mmrmt_runtime.py'
]

model = dict(
    backbone=dict(
        _delete_=True,
        type='ResT',
        arch='small',
        drop_path_rate=0.1,
        frozen_stages=1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rest-small_in1k.pth')),
    neck=dict(in_channels=[64, 128, 256, 512]))

optim_wrapper = dict(clip_grad=dict(max_norm=0.01, norm_type=2))
