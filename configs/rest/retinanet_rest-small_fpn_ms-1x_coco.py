# RetinaNet with ResT-Small (ResT paper, Table 3), as the authors'
# detectron2 config (object_detection/configs/ResTv1/retinanet_rest_small_FPN_1x.yaml
# on Base-RetinaNet.yaml): AdamW lr 1e-4, weight decay 0.05, batch 16, 90k
# iterations (det_adamw_90k.py), shorter side one of 640-800 (the paper's
# text says 480-800), stem and stage 1 frozen (FREEZE_AT=2), no gradient
# clipping, no crop, fp32. Stages 2-4 feed the FPN, as upstream.
_base_ = [
    'mmdet::_base_/models/retinanet_r50_fpn.py', '../_base_/datasets/coco_detection_ms-640-800.py',
    '../_base_/schedules/det_adamw_90k.py', '../_base_/mmrmt_runtime.py'
]

model = dict(
    backbone=dict(
        _delete_=True,
        type='ResT',
        arch='small',
        drop_path_rate=0.1,
        out_indices=(1, 2, 3),
        frozen_stages=1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rest-small_in1k.pth')),
    neck=dict(in_channels=[128, 256, 512], start_level=0))
