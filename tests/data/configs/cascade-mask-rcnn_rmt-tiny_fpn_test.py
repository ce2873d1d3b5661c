# The RMT-T Cascade Mask R-CNN with a tiny RMT, for seconds-long export tests.
_base_ = ['../../../configs/rmt/cascade-mask-rcnn_rmt-t_fpn_ms-3x_coco.py', './_tiny_rmt.py']

model = dict(backbone=dict(arch={{_base_.tiny_rmt}}), neck=dict(in_channels={{_base_.tiny_channels}}))
