_base_ = './mask-rcnn_rmt-t_fpn_1x_coco.py'

model = dict(
    backbone=dict(arch='l', drop_path_rate=0.5, init_cfg=dict(checkpoint='checkpoints/rmt-l_in1k.pth')),
    neck=dict(in_channels=[112, 224, 448, 640]))
optim_wrapper = dict(optimizer=dict(lr=2e-4))
