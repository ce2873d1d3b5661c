# What the tiny RetinaNet test configs share: a 32-channel FPN and head, and
# a test pipeline of 64 px images (the zoo's resizes to 800x1333).
tiny_head = dict(in_channels=32, feat_channels=32, stacked_convs=1)
tiny_test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(96, 64), keep_ratio=True),
    dict(type='PackDetInputs', meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape', 'scale_factor')),
]
