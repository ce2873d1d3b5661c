# Semantic FPN with RMT-T on ADE20K, 160k iterations: the 80k recipe on the
# 160k schedule.
_base_ = ['../_base_/fpn_rmt-t_ade20k-512x512.py', '../_base_/schedules/seg_adamw-poly_160k.py']
