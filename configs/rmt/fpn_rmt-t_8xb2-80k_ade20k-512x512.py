# Semantic FPN with RMT-T on ADE20K, 80k iterations (RMT paper, Table 5).
_base_ = ['../_base_/fpn_rmt-t_ade20k-512x512.py', '../_base_/schedules/seg_adamw-poly_80k.py']
