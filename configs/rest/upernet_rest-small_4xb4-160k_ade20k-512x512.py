# UperNet with ResT-Small on ADE20K, 160k iterations, with the auxiliary FCN
# head on stage 3; the RMT/Swin UperNet recipe (the ResT paper has no ADE20K
# experiment).
_base_ = '../_base_/upernet_4xb4-160k_ade20k-512x512.py'

model = dict(
    backbone=dict(
        _delete_=True,
        type='ResT',
        arch='small',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rest-small_in1k.pth')),
    decode_head=dict(in_channels=[64, 128, 256, 512]),
    auxiliary_head=dict(in_channels=256))
