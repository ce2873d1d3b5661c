_base_ = './upernet_rmt-t_8xb2-160k_ade20k-512x512.py'

model = dict(
    backbone=dict(arch='l', drop_path_rate=0.5, init_cfg=dict(checkpoint='checkpoints/rmt-l_in1k.pth')),
    decode_head=dict(in_channels=[112, 224, 448, 640]),
    auxiliary_head=dict(in_channels=448))
