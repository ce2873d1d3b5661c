# Semantic FPN on ADE20K as PVT trains it (the RMT paper follows PVT): AdamW,
# lr 1e-4, weight decay 1e-4, poly decay (power 0.9) to 0 over 80k iterations,
# batch 16 (4 GPUs x 4 images). No decay on norms, Affine norms and layer
# scales (as det_adamw_1x).
_base_ = 'mmseg::_base_/schedules/schedule_80k.py'

optim_wrapper = dict(
    optimizer=dict(_delete_=True, type='AdamW', lr=1e-4, betas=(0.9, 0.999), weight_decay=1e-4),
    paramwise_cfg=dict(
        norm_decay_mult=0.,
        custom_keys={
            '.gamma_': dict(decay_mult=0.), '.ls1': dict(decay_mult=0.), '.ls2': dict(decay_mult=0.),
            '.alpha': dict(decay_mult=0.), '.beta': dict(decay_mult=0.)
        }))
param_scheduler = [dict(type='PolyLR', eta_min=0., power=0.9, begin=0, end=80000, by_epoch=False)]

# The learning rates assume batches of 16 images (4 GPUs x 4); tools/train.py
# --auto-scale-lr rescales them to the batch size of the run (as mmdet's schedules).
auto_scale_lr = dict(enable=False, base_batch_size=16)
