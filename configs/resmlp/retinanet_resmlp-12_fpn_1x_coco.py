# RetinaNet 1x with ResMLP-12 (no paper number: the ResMLP paper has no
# detection experiment), the RMT recipe: AdamW, lr 1e-4, weight decay 1e-4.
# The pyramid's stride 8-32 levels feed the FPN (the stride-4 one is not built).
_base_ = [
    'mmdet::_base_/models/retinanet_r50_fpn.py', '../_base_/datasets/coco_detection.py',
    '../_base_/schedules/det_adamw_1x.py',
    'mmdet::_base_/default_runtime.py', '../_base_/mmrmt_runtime.py'
]

model = dict(
    backbone=dict(
        _delete_=True,
        type='ResMLP',
        arch='12',
        drop_path_rate=0.1,
        out_levels=(1, 2, 3),
        init_cfg=dict(type='Pretrained', checkpoint='checkpoints/resmlp-12_in1k.pth')),
    neck=dict(in_channels=[384, 384, 384], start_level=0))

optim_wrapper = dict(optimizer=dict(weight_decay=1e-4))
