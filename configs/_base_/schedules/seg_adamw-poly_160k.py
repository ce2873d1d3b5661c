# seg_adamw-poly_80k stretched to 160k iterations.
_base_ = './seg_adamw-poly_80k.py'

train_cfg = dict(max_iters=160000, val_interval=16000)
param_scheduler = [dict(type='PolyLR', eta_min=0., power=0.9, begin=0, end=160000, by_epoch=False)]
default_hooks = dict(checkpoint=dict(interval=16000))
