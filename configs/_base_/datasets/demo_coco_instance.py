# The synthetic demo instance set (mmrmt.datasets.make_demo_data): 128x128
# images of circles, squares and triangles in COCO format.
_base_ = ['./coco_instance.py']

data_root = 'data/demo/coco/'
metainfo = dict(classes=('circle', 'square', 'triangle'),
                palette=[(220, 20, 60), (0, 160, 0), (30, 60, 255)])
image_scale = (128, 128)

# the steps around the Resize, which a config at another image size reuses as
# {{_base_.demo_annotations}} and {{_base_.demo_test_packing}}
demo_annotations = dict(type='LoadAnnotations', with_bbox=True, with_mask=True)
demo_test_packing = dict(type='PackDetInputs',
                         meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor'))
train_pipeline = [
    dict(type='LoadImageFromFile'),
    demo_annotations,
    dict(type='Resize', scale=image_scale, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=image_scale, keep_ratio=True),
    demo_annotations,
    demo_test_packing,
]
train_dataloader = dict(
    batch_size=4,
    num_workers=1,
    dataset=dict(data_root=data_root, metainfo=metainfo,
                 ann_file='annotations/instances_train.json',
                 data_prefix=dict(img='train/'), pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=4,
    num_workers=1,
    dataset=dict(data_root=data_root, metainfo=metainfo,
                 ann_file='annotations/instances_val.json',
                 data_prefix=dict(img='val/'), pipeline=test_pipeline))
test_dataloader = val_dataloader

val_evaluator = dict(ann_file=data_root + 'annotations/instances_val.json')
test_evaluator = val_evaluator

# The learning rates of the demo configs are meant for batches of this size
# (tools/train.py --auto-scale-lr rescales them to the batch size of the run).
auto_scale_lr = dict(enable=False, base_batch_size=4)

# tools/test.py --tta: coco_tta.py's views at this set's scales (x0.75, x1, x1.25)
tta_scales = [(96, 96), image_scale, (160, 160)]
tta_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='TestTimeAug',
         transforms=[[dict(type='Resize', scale=scale, keep_ratio=True) for scale in tta_scales],
                     {{_base_.tta_flips}}, {{_base_.tta_annotations}}, {{_base_.tta_packing}}])
]
