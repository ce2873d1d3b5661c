# The RMT authors' Mask R-CNN 1x schedule (detect/configs/RMT/maskrcnn_*_1x.py
# on mmdet's schedule_1x): AdamW lr 4e-4 (L: 2e-4, set by its config),
# weight decay 0.05, batch 16 (2 images a GPU), linear warm-up over 500
# iterations from x0.001, lr x0.1 after epochs 8 and 11. Their paramwise_cfg
# exempts from decay every parameter whose name contains 'norm' (and
# 'absolute_pos_embed' / 'relative_position_bias_table', which RMT has
# none of): RMT's LayerNorms and its downsampling BN, not the stem's BN nor
# the layer scales. The last epoch's checkpoint is the result. They trained
# in fp16 with dynamic loss scaling: tools/train.py --amp does that
# (amp_loss_scale).
_base_ = './det_adamw_1x.py'

# mmengine's LinearLR and PolyLR reach their end one step before `end`; each
# `end` here is one past mmcv's length, so every iteration gets mmcv's lr.
optim_wrapper = dict(
    optimizer=dict(lr=4e-4),
    paramwise_cfg=dict(_delete_=True, custom_keys={'norm': dict(decay_mult=0.)}))
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=501),
    dict(type='MultiStepLR', begin=0, end=12, by_epoch=True, milestones=[8, 11], gamma=0.1)
]
amp_loss_scale = 'dynamic'
