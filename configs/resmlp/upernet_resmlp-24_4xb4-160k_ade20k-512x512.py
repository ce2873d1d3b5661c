_base_ = './upernet_resmlp-12_4xb4-160k_ade20k-512x512.py'

model = dict(
    backbone=dict(arch='24', drop_path_rate=0.2, init_cfg=dict(checkpoint='checkpoints/resmlp-24_in1k.pth')))
