# UperNet with ResMLP-12 on ADE20K, 160k iterations, with the auxiliary FCN
# head on the stride-16 level; the RMT/Swin UperNet recipe (no paper number).
_base_ = '../_base_/upernet_4xb4-160k_ade20k-512x512.py'

model = dict(
    backbone=dict(
        _delete_=True,
        type='ResMLP',
        arch='12',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/resmlp-12_in1k.pth')),
    decode_head=dict(in_channels=[384, 384, 384, 384]),
    auxiliary_head=dict(in_channels=384))
