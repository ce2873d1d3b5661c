# The ResMLP-12 RetinaNet with a tiny ResMLP and 64 px images, for seconds-long deployment tests.
_base_ = ['../../../configs/resmlp/retinanet_resmlp-12_fpn_1x_coco.py', './_tiny_retinanet.py']

model = dict(backbone=dict(arch=dict(_delete_=True, embed_dims=32, depth=4, patch_size=16, window_size=4)),
             neck=dict(out_channels=32, in_channels=[32, 32, 32]), bbox_head={{_base_.tiny_head}})
test_dataloader = dict(dataset=dict(pipeline={{_base_.tiny_test_pipeline}}))
