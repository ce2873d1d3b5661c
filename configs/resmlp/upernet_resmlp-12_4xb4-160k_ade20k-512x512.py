# UperNet with ResMLP-12 on ADE20K, 160k iterations, with the auxiliary FCN
# head on the stride-16 level; the RMT/Swin UperNet recipe (no paper number).
_base_ = [
    'mmseg::_base_/models/upernet_r50.py', 'mmseg::_base_/datasets/ade20k.py',
    'mmseg::_base_/default_runtime.py', '../_base_/schedules/seg_adamw-warmup-poly_160k.py'
]
custom_imports = dict(imports=['mmrmt'], allow_failed_imports=False)

crop_size = (512, 512)
data_preprocessor = dict(size=crop_size)
model = dict(
    data_preprocessor=data_preprocessor,
    pretrained=None,
    backbone=dict(
        _delete_=True,
        type='ResMLP',
        arch='12',
        drop_path_rate=0.1,
        norm_cfg=dict(type='SyncBN', requires_grad=True),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/resmlp-12_in1k.pth')),
    decode_head=dict(in_channels=[384, 384, 384, 384], num_classes=150),
    auxiliary_head=dict(in_channels=384, num_classes=150))
