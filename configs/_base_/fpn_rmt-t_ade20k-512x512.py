# Semantic FPN with RMT-T on ADE20K as the RMT authors trained it
# (segmentation/configs/RMT/RMT_FPN_*_1x.py): 512x512 crops, 2 images a GPU
# (batch 16 on 8 GPUs), 150 classes, in fp32 (no fp16 in those files). It holds no schedule: a config
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
train_dataloader = dict(batch_size=2)
