_base_ = './retinanet_rmt-t_fpn_1x_coco.py'

model = dict(
    backbone=dict(arch='b', drop_path_rate=0.4, init_cfg=dict(checkpoint='checkpoints/rmt-b_in1k.pth')),
    neck=dict(in_channels=[160, 320, 512]))
