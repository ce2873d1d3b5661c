_base_ = './upernet_rest-small_4xb4-160k_ade20k-512x512.py'

model = dict(
    backbone=dict(
        arch='base', drop_path_rate=0.2, init_cfg=dict(checkpoint='checkpoints/rest-base_in1k.pth')),
    decode_head=dict(in_channels=[96, 192, 384, 768]),
    auxiliary_head=dict(in_channels=384))
