# UperNet on ADE20K as Swin and RMT train it: 512x512 crops, batch 16
# (4 GPUs x 4 here; RMT's configs take the released 8 x 2), AdamW 6e-5 with a
# 1500-iteration warm-up on a linear decay over 160k iterations, the
# auxiliary FCN head. A config inheriting this states only its backbone and
# the heads' input channels.
_base_ = [
    'mmseg::_base_/models/upernet_r50.py', 'mmseg::_base_/datasets/ade20k.py',
    'mmseg::_base_/default_runtime.py', './mmrmt_runtime.py',
    './schedules/seg_adamw-warmup-poly_160k.py'
]

crop_size = (512, 512)
data_preprocessor = dict(size=crop_size)
model = dict(
    data_preprocessor=data_preprocessor,
    pretrained=None,
    decode_head=dict(num_classes=150),
    auxiliary_head=dict(num_classes=150))
