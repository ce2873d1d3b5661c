# The tiny UperNet at 96x160, whose 3x5 stride-32 map none of the pyramid
# pooling's 2, 3 and 6 bins divides in both directions (mmdeploy's own
# avg_pool2d rewrite of adaptive pooling is wrong there).
_base_ = ['./upernet_rmt-tiny_test.py']

image_size = (96, 160)
model = dict(data_preprocessor=dict(size=image_size))
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(160, 96), keep_ratio=True),
    dict(type='PackSegInputs'),
]
