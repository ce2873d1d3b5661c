# The RMT authors' 3x schedule (detect/configs/RMT/{maskrcnn,casrcnn}_*_3x.py):
# rmt_det_adamw_1x for 36 epochs, lr x0.1 after epochs 27 and 33.
_base_ = './rmt_det_adamw_1x.py'

max_epochs = 36
train_cfg = dict(max_epochs=max_epochs)
param_scheduler = [
    dict(type='LinearLR', start_factor=0.001, by_epoch=False, begin=0, end=501),
    dict(type='MultiStepLR', begin=0, end=max_epochs, by_epoch=True, milestones=[27, 33], gamma=0.1)
]
