# mmdet's Cascade Mask R-CNN with the box heads Swin, ConvNeXt and the RMT
# paper use for "Cascade Mask R-CNN 3x+MS": four 3x3 convs (SyncBN) and one fc
# per stage, class-specific regression of decoded boxes with a GIoU loss.
_base_ = 'mmdet::_base_/models/cascade-mask-rcnn_r50_fpn.py'

model = dict(
    roi_head=dict(bbox_head=[
        dict(stage_head,
             type='ConvFCBBoxHead',
             num_shared_convs=4,
             num_shared_fcs=1,
             conv_out_channels=256,
             norm_cfg=dict(type='SyncBN', requires_grad=True),
             reg_class_agnostic=False,
             reg_decoded_bbox=True,
             loss_bbox=dict(type='GIoULoss', loss_weight=10.0))
        for stage_head in _base_.model.roi_head.bbox_head
    ]))
