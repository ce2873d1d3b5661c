# Semantic FPN with RMT-T on ADE20K, 160k iterations: the 80k config on the
# 160k schedule (../_base_/schedules/seg_adamw-poly_160k.py).
_base_ = './fpn_rmt-t_4xb4-80k_ade20k-512x512.py'

train_cfg = dict(max_iters=160000, val_interval=16000)
param_scheduler = [dict(type='PolyLR', eta_min=0., power=0.9, begin=0, end=160000, by_epoch=False)]
default_hooks = dict(checkpoint=dict(interval=16000))
