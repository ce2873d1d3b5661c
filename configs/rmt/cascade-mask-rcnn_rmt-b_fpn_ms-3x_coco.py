_base_ = './cascade-mask-rcnn_rmt-t_fpn_ms-3x_coco.py'

model = dict(
    backbone=dict(arch='b', drop_path_rate=0.4, init_cfg=dict(checkpoint='checkpoints/rmt-b_in1k.pth')),
    neck=dict(in_channels=[80, 160, 320, 512]))
optim_wrapper = dict(optimizer=dict(lr=2e-4))
