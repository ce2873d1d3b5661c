_base_ = './mask-rcnn_rest-small_fpn_ms-1x_coco.py'

model = dict(
    backbone=dict(
        arch='base', drop_path_rate=0.2, init_cfg=dict(checkpoint='checkpoints/rest-base_in1k.pth')),
    neck=dict(in_channels=[96, 192, 384, 768]))
