_base_ = './fpn_rmt-t_8xb2-80k_ade20k-512x512.py'

model = dict(
    backbone=dict(arch='b', drop_path_rate=0.4, init_cfg=dict(checkpoint='checkpoints/rmt-b_in1k.pth')),
    neck=dict(in_channels=[80, 160, 320, 512]))
