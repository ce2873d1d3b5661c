# Semantic FPN with RMT-T on ADE20K as PVT and RMT train it: 512x512 crops,
# batch 16 (4 GPUs x 4), 150 classes. It holds no schedule: a config
# inheriting it adds one of ./schedules/seg_adamw-poly_{80k,160k}.py; the
# other variants override the backbone's arch, drop path and checkpoint.
_base_ = [
    'mmseg::_base_/models/fpn_r50.py', 'mmseg::_base_/datasets/ade20k.py',
    'mmseg::_base_/default_runtime.py', './mmrmt_runtime.py'
]

crop_size = (512, 512)
data_preprocessor = dict(size=crop_size)
model = dict(
    data_preprocessor=data_preprocessor,
    pretrained=None,
    backbone=dict(
        _delete_=True,
        type='RMT',
        arch='t',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/rmt-t_in1k.pth')),
    neck=dict(in_channels=[64, 128, 256, 512]),
    decode_head=dict(num_classes=150))
