# Test-time augmentation of the COCO configs (tools/test.py --tta): each image
# at three scales (mmdet's RetinaNet TTA scales), flipped and not; the views'
# detections are merged by one NMS. InstanceSegTTAModel (mmrmt) is mmdet's
# DetTTAModel that also merges the masks of Mask R-CNN and Cascade Mask R-CNN;
# its scoped name imports it when a run builds it (see mmrmt/registry.py).
# A set at other image sizes redefines tta_pipeline with its own scales and
# reuses the later steps as {{_base_.tta_flips}}, ... (see demo_coco_instance.py).
tta_model = dict(
    type='mmrmt.InstanceSegTTAModel', tta_cfg=dict(nms=dict(type='nms', iou_threshold=0.5), max_per_img=100))

tta_scales = [(1333, 800), (666, 400), (2000, 1200)]
# flips come before any padding, or boxes could not be flipped back
tta_flips = [dict(type='RandomFlip', prob=1.), dict(type='RandomFlip', prob=0.)]
tta_annotations = [dict(type='LoadAnnotations', with_bbox=True)]
tta_packing = [
    dict(type='PackDetInputs',
         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor', 'flip', 'flip_direction'))
]
tta_pipeline = [
    dict(type='LoadImageFromFile', backend_args=None),
    dict(type='TestTimeAug',
         transforms=[[dict(type='Resize', scale=scale, keep_ratio=True) for scale in tta_scales],
                     tta_flips, tta_annotations, tta_packing])
]
