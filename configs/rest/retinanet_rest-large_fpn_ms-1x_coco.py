_base_ = './retinanet_rest-small_fpn_ms-1x_coco.py'

model = dict(
    backbone=dict(
        arch='large', drop_path_rate=0.2, init_cfg=dict(checkpoint='checkpoints/rest-large_in1k.pth')),
    neck=dict(in_channels=[192, 384, 768]))
