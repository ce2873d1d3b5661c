# seg_adamw-poly_80k stretched to 160k iterations (no released config: the
# authors trained Semantic FPN for 80k only); intervals as at 80k.
_base_ = './seg_adamw-poly_80k.py'

train_cfg = dict(max_iters=160000)
param_scheduler = [dict(type='PolyLR', eta_min=1e-6, power=0.9, begin=0, end=160001, by_epoch=False)]
