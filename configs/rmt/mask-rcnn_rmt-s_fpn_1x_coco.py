_base_ = './mask-rcnn_rmt-t_fpn_1x_coco.py'

model = dict(
    backbone=dict(arch='s', drop_path_rate=0.15, init_cfg=dict(checkpoint='checkpoints/rmt-s_in1k.pth')))
