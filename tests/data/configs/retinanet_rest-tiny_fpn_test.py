# The ResT-Small RetinaNet with a tiny ResT and 64 px images, for seconds-long deployment tests.
_base_ = ['../../../configs/rest/retinanet_rest-small_fpn_ms-1x_coco.py', './_tiny_retinanet.py']

tiny_rest = dict(_delete_=True, embed_dims=[16, 32, 64, 64], depths=[1, 1, 1, 1], num_heads=[1, 2, 4, 4],
                 mlp_ratios=[2, 2, 2, 2], sr_ratios=[8, 4, 2, 1])
model = dict(backbone=dict(arch=tiny_rest), neck=dict(out_channels=32, in_channels=[32, 64, 64]),
             bbox_head={{_base_.tiny_head}})
test_dataloader = dict(dataset=dict(pipeline={{_base_.tiny_test_pipeline}}))
