# COCO instance segmentation with the "+MS" training of the 3x recipes: the
# shorter side is drawn uniformly from [480, 800], the longer side capped at 1333.
_base_ = './coco_instance.py'

train_pipeline = [
    dict(type='LoadImageFromFile', backend_args={{_base_.backend_args}}),
    dict(type='LoadAnnotations', with_bbox=True, with_mask=True),
    dict(type='RandomResize', scale=[(1333, 480), (1333, 800)], keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
