_base_ = './upernet_rmt-t_8xb2-160k_ade20k-512x512.py'

model = dict(
    backbone=dict(arch='b', drop_path_rate=0.4, init_cfg=dict(checkpoint='checkpoints/rmt-b_in1k.pth')),
    decode_head=dict(in_channels=[80, 160, 320, 512]),
    auxiliary_head=dict(in_channels=320))
