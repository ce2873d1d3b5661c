# COCO detection with the ResT authors' detectron2 training scales
# (object_detection/configs/Base-RetinaNet.yaml): the shorter side is one of
# 640, 672, ..., 800 (detectron2's MIN_SIZE_TRAIN "choice"), the longer side
# at most 1333 (detectron2's default MAX_SIZE_TRAIN).
_base_ = './coco_detection.py'

multi_scales = [(1333, short) for short in range(640, 801, 32)]
train_pipeline = [
    dict(type='LoadImageFromFile', backend_args={{_base_.backend_args}}),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='RandomChoiceResize', scales=multi_scales, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
