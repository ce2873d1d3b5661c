_base_ = './fpn_rmt-t_8xb2-80k_ade20k-512x512.py'

model = dict(
    backbone=dict(arch='s', drop_path_rate=0.15, init_cfg=dict(checkpoint='checkpoints/rmt-s_in1k.pth')))
