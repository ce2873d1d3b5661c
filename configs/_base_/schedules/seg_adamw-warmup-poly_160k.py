# UperNet on ADE20K as Swin trains it (the RMT paper follows Swin): AdamW,
# lr 6e-5, weight decay 0.01, linear warm-up over 1500 iterations, then linear
# ("poly", power 1) decay to 0 at 160k iterations; batch 16 (4 GPUs x 4).
_base_ = './seg_adamw-poly_160k.py'

optim_wrapper = dict(optimizer=dict(lr=6e-5, weight_decay=0.01))
param_scheduler = [
    dict(type='LinearLR', start_factor=1e-6, by_epoch=False, begin=0, end=1500),
    dict(type='PolyLR', eta_min=0., power=1.0, begin=1500, end=160000, by_epoch=False)
]
