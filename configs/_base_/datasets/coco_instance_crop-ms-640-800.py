# COCO instance segmentation with the ResT authors' detectron2 Mask R-CNN
# augmentation (object_detection/configs/Base-RCNN-FPN.yaml): a random crop of
# 0.9 x 0.9 of the image (boxes recomputed from the cropped masks, as
# detectron2 does when masks and crops are on), then the shorter side one of
# 640, 672, ..., 800 (longer side at most 1333), then the flip.
_base_ = './coco_instance.py'

multi_scales = [(1333, short) for short in range(640, 801, 32)]
train_pipeline = [
    dict(type='LoadImageFromFile', backend_args={{_base_.backend_args}}),
    dict(type='LoadAnnotations', with_bbox=True, with_mask=True),
    dict(type='RandomCrop', crop_type='relative', crop_size=(0.9, 0.9), recompute_bbox=True),
    dict(type='RandomChoiceResize', scales=multi_scales, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
