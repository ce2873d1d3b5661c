# Semantic FPN with RMT-T on ADE20K, 160k iterations: the 80k recipe on the
# 160k schedule.
_base_ = ['../_base_/fpn_ade20k-512x512.py', '../_base_/schedules/seg_adamw-poly_160k.py']

model = dict(
    backbone=dict(
        _delete_=True,
        type='RMT',
        arch='t',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rmt-t_in1k.pth')),
    neck=dict(in_channels=[64, 128, 256, 512]))
