# UperNet with RMT-T on ADE20K, 160k iterations, with the auxiliary FCN head
# on stage 3 (the RMT paper reports S/B/L, Table 5).
_base_ = '../_base_/upernet_4xb4-160k_ade20k-512x512.py'

model = dict(
    backbone=dict(
        _delete_=True,
        type='RMT',
        arch='t',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rmt-t_in1k.pth')),
    decode_head=dict(in_channels=[64, 128, 256, 512]),
    auxiliary_head=dict(in_channels=256))
