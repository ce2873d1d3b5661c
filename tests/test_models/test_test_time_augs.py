"""InstanceSegTTAModel merges the views of an image: a flipped view's masks flipped back with their boxes."""
import pytest
import torch
from mmdet.structures import DetDataSample
from mmdet.structures.mask import mask2bbox
from mmengine.structures import InstanceData
from torch import nn

from mmrmt.models.test_time_augs import InstanceSegTTAModel
from helpers.rounding import unit_roundoff

HEIGHT, WIDTH = 8, 10


def view(masks: torch.Tensor, scores, labels, flip: bool) -> DetDataSample:
    """One augmented view's prediction: masks (N, H, W) on the (flipped) original image."""
    sample = DetDataSample(metainfo=dict(ori_shape=(HEIGHT, WIDTH), flip=flip,
                                         flip_direction='horizontal' if flip else None))
    sample.pred_instances = InstanceData(bboxes=mask2bbox(masks).float(), masks=masks,
                                         scores=torch.tensor(scores), labels=torch.tensor(labels))
    return sample


class MergeOnly(nn.Module):
    """The detector slot of the TTA model, for tests of merging alone (no forward pass)."""

    def test_step(self, data):
        raise AssertionError('merging needs no forward pass')


def test_instance_tta_flips_masks_back_with_their_boxes():
    square = torch.zeros(HEIGHT, WIDTH, dtype=torch.bool)
    square[2:6, 1:4] = True
    corner = torch.zeros(HEIGHT, WIDTH, dtype=torch.bool)
    corner[0:2, 7:10] = True
    plain = view(torch.stack([square, corner]), [0.8, 0.5], [0, 1], flip=False)
    # the flipped view sees the square more confidently: NMS keeps its detection
    flipped = view(square.flip(1)[None], [0.9], [0], flip=True)
    model = InstanceSegTTAModel(module=MergeOnly(),
                                tta_cfg=dict(nms=dict(type='nms', iou_threshold=0.5), max_per_img=100))
    (merged, ) = model.merge_preds([[plain, flipped]])
    result = merged.pred_instances
    # the views' scores kept, as float32 holds them (0.9 rounded once)
    assert result.scores.tolist() == pytest.approx([0.9, 0.5], rel=unit_roundoff(torch.float32))
    assert result.labels.tolist() == [0, 1]
    assert torch.equal(result.masks, torch.stack([square, corner]))
    assert torch.equal(result.bboxes, mask2bbox(result.masks).float())
