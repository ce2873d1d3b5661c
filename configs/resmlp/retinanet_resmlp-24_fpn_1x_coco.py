_base_ = './retinanet_resmlp-12_fpn_1x_coco.py'

model = dict(
    backbone=dict(arch='24', drop_path_rate=0.2, init_cfg=dict(checkpoint='checkpoints/resmlp-24_in1k.pth')))
