# As the released maskrcnn_l_3x.py: lr 2e-4 and one image a GPU (batch 16 on 16 GPUs).
_base_ = './mask-rcnn_rmt-t_fpn_ms-3x_coco.py'

model = dict(
    backbone=dict(arch='l', drop_path_rate=0.5, init_cfg=dict(checkpoint='checkpoints/rmt-l_in1k.pth')),
    neck=dict(in_channels=[112, 224, 448, 640]))
optim_wrapper = dict(optimizer=dict(lr=2e-4))
train_dataloader = dict(batch_size=1)
