# COCO "1x" with AdamW, as the RMT and ResT papers' texts state (their
# released configs differ: rmt_det_adamw_1x.py, det_adamw_90k.py); ResMLP's
# detectors use it as it is. lr 1e-4, batch 16 (8 GPUs x 2 images), linear
# warm-up over the first 500 iterations, lr x0.1 after epochs 8 and 11 (both
# from mmdet's schedule_1x). Weight decay 0.05 (RetinaNet configs set 1e-4).
# No decay on norm layers (BN, LayerNorm), on ResMLP's Affine norms
# (``alpha``, ``beta``) nor on its layer-scale factors (``ls1/2``).
_base_ = 'mmdet::_base_/schedules/schedule_1x.py'

optim_wrapper = dict(
    optimizer=dict(_delete_=True, type='AdamW', lr=1e-4, betas=(0.9, 0.999), weight_decay=0.05),
    paramwise_cfg=dict(
        norm_decay_mult=0.,
        custom_keys={
            '.ls1': dict(decay_mult=0.), '.ls2': dict(decay_mult=0.),
            '.alpha': dict(decay_mult=0.), '.beta': dict(decay_mult=0.)
        }))
