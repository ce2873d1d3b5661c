"""Test-time augmentation for instance segmentation (Mask R-CNN, Cascade Mask R-CNN).

mmdet's ``DetTTAModel`` merges the boxes of the augmented views of an image
(flipped back, then one NMS) but refuses predictions with masks. Masks of a
detector that rescales its results already live on the original image, so the
views differ only by their flip: :class:`InstanceSegTTAModel` flips each
view's masks back and keeps, for every box the NMS keeps, the mask that came
with it.
"""
from typing import List

import torch
from mmcv.ops import batched_nms
from mmdet.models.test_time_augs import DetTTAModel
from mmdet.structures import DetDataSample
from mmengine.structures import InstanceData

from mmrmt.registry import MODELS

#: Dimensions of a (N, H, W) mask tensor each flip direction reverses.
FLIP_DIMS = {'horizontal': (2, ), 'vertical': (1, ), 'diagonal': (1, 2)}


def unflip_masks(masks: torch.Tensor, meta: dict) -> torch.Tensor:
    """The masks of a flipped view, put back on the unflipped image."""
    if not meta.get('flip'):
        return masks
    return masks.flip(FLIP_DIMS[meta['flip_direction']])


@MODELS.register_module()
class InstanceSegTTAModel(DetTTAModel):
    """``DetTTAModel`` that also merges instance masks (flip and multi-scale).

    Predictions without masks are merged exactly as ``DetTTAModel`` does.

    Args:
        tta_cfg (dict): ``nms`` (the NMS config merging the views' boxes)
            and ``max_per_img``, as for ``DetTTAModel``.
        **kwargs: ``module`` (the detector) and the other arguments of
            mmengine's ``BaseTTAModel``.
    """

    def _merge_single_sample(self, data_samples: List[DetDataSample]) -> DetDataSample:
        if data_samples[0].pred_instances.get('masks') is None:
            return super()._merge_single_sample(data_samples)
        metas = [sample.metainfo for sample in data_samples]
        instances = [sample.pred_instances for sample in data_samples]
        bboxes, scores = self.merge_aug_bboxes([item.bboxes for item in instances],
                                               [item.scores for item in instances], metas)
        if bboxes.numel() == 0:
            return data_samples[0]
        labels = torch.cat([item.labels for item in instances])
        masks = torch.cat([unflip_masks(item.masks, meta) for item, meta in zip(instances, metas)])
        detections, keep = batched_nms(bboxes, scores, labels, self.tta_cfg['nms'])
        keep = keep[:self.tta_cfg['max_per_img']]
        merged = InstanceData()
        merged.bboxes = detections[:len(keep), :-1]
        merged.scores = detections[:len(keep), -1]
        merged.labels = labels[keep]
        merged.masks = masks[keep]
        result = data_samples[0]
        result.pred_instances = merged
        return result
