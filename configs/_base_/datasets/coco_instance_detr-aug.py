# COCO instance segmentation with the RMT authors' "3x+MS" training pipeline
# (detect/configs/RMT/{maskrcnn,casrcnn}_*_3x.py, from DETR / Sparse R-CNN):
# after the flip, one of two branches, each with probability 1/2 — resize the
# shorter side to one of 480, 512, ..., 800 (longer side at most 1333); or
# resize it to 400, 500 or 600, crop a random box of 384-600 px sides, then
# resize to one of 480-800 as in the first branch.
_base_ = './coco_instance.py'

multi_scales = [(1333, short) for short in range(480, 801, 32)]
train_pipeline = [
    dict(type='LoadImageFromFile', backend_args={{_base_.backend_args}}),
    dict(type='LoadAnnotations', with_bbox=True, with_mask=True),
    dict(type='RandomFlip', prob=0.5),
    dict(
        type='RandomChoice',
        transforms=[
            [dict(type='RandomChoiceResize', scales=multi_scales, keep_ratio=True)],
            [
                dict(type='RandomChoiceResize', scales=[(1333, 400), (1333, 500), (1333, 600)],
                     keep_ratio=True),
                dict(type='RandomCrop', crop_type='absolute_range', crop_size=(384, 600),
                     allow_negative_crop=True),
                dict(type='RandomChoiceResize', scales=multi_scales, keep_ratio=True)
            ],
        ]),
    dict(type='PackDetInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
