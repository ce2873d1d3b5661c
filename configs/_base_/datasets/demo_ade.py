# The synthetic demo semantic set (mmrmt.datasets.make_demo_data): 128x128
# sky-and-ground scenes with shapes, ADE20K layout (0 = unlabelled).
# BaseSegDataset, as ADE20KDataset only accepts subsets of its own classes.
# tools/test.py --tta uses ade20k.py's tta_pipeline (six scales, flipped and
# not) and the SegTTAModel of mmseg's default_runtime.py.
_base_ = 'mmseg::_base_/datasets/ade20k.py'

dataset_type = 'BaseSegDataset'

data_root = 'data/demo/ade/'
metainfo = dict(classes=('sky', 'ground', 'circle', 'square', 'triangle'),
                palette=[[70, 130, 180], [140, 100, 50], [220, 20, 60], [0, 160, 0], [30, 60, 255]])
crop_size = (128, 128)

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', reduce_zero_label=True),
    dict(type='RandomResize', scale=(128, 128), ratio_range=(0.75, 1.5), keep_ratio=True),
    dict(type='RandomCrop', crop_size=crop_size, cat_max_ratio=0.9),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackSegInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(128, 128), keep_ratio=True),
    dict(type='LoadAnnotations', reduce_zero_label=True),
    dict(type='PackSegInputs'),
]
train_dataloader = dict(
    batch_size=4,
    num_workers=1,
    dataset=dict(type=dataset_type, data_root=data_root, metainfo=metainfo, reduce_zero_label=True,
                 pipeline=train_pipeline))
val_dataloader = dict(
    num_workers=1,
    dataset=dict(type=dataset_type, data_root=data_root, metainfo=metainfo, reduce_zero_label=True,
                 pipeline=test_pipeline))
test_dataloader = val_dataloader

# The learning rates of the demo configs are meant for batches of this size
# (tools/train.py --auto-scale-lr rescales them to the batch size of the run).
auto_scale_lr = dict(enable=False, base_batch_size=4)
