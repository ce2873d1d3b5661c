# The RMT-T RetinaNet with a tiny RMT and 64 px images, for seconds-long deployment tests.
_base_ = ['../../../configs/rmt/retinanet_rmt-t_fpn_1x_coco.py', './_tiny_rmt.py', './_tiny_retinanet.py']

model = dict(backbone=dict(arch={{_base_.tiny_rmt}}), neck=dict(out_channels=32, in_channels=[32, 64, 64]),
             bbox_head={{_base_.tiny_head}})
test_dataloader = dict(dataset=dict(pipeline={{_base_.tiny_test_pipeline}}))
