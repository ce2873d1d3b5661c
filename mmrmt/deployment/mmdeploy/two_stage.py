"""mmdet's two-stage box post-processing in mmdeploy's graphs, computed as mmdet computes it.

mmdeploy 1.3.1 rewrites the post-processing of mmdet's RPN and RoI box head
for export, and both rewrites predict other proposals and detections than
mmdet does (tests/test_deployment/test_mmdeploy/test_mmdeploy_two_stage.py gives both the
same head outputs):

* ``RPNHead.predict_by_feat``: one NMS over the proposals of all levels
  (mmdet: NMS within each level, ``batched_nms`` over the level ids), a
  score threshold from the deploy config (mmdet's RPN has none) and boxes
  of no size kept (mmdet drops those not wider and higher than
  ``min_bbox_size``);
* ``BBoxHead.predict_by_feat``: every class of a RoI scored with the box
  regressed for the RoI's best class (mmdet: each class with its own box),
  and the NMS capped by the deploy config's ``max_output_boxes_per_class``.

The two rewriters here follow mmdet's ``test_cfg`` (``rpn``: ``nms_pre``,
``min_bbox_size``, ``nms``, ``max_per_img``; ``rcnn``: ``score_thr``,
``nms``, ``max_per_img``) and nothing of the deploy config's
``post_processing``; NMS within groups (levels, classes) is mmcv's
``batched_nms``: the boxes of each group shifted apart, one ONNX
``NonMaxSuppression``. They convert one image a batch (a static batch of one),
as mmdet's two-stage test does, and refuse anything else; mmrmt's mmdeploy
rewriters (:mod:`mmrmt.deployment.mmdeploy.rewriters`) register them.
"""
from typing import List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from mmdeploy.core import FUNCTION_REWRITER
from mmdeploy.mmcv.ops import ONNXNMSop
from mmdeploy.utils import is_dynamic_batch
from mmengine.config import Config
from torch import Tensor

from .errors import InexactExportError


def check_one_image(deploy_cfg: Config, batch_size: int, nms_cfg: dict, head: str) -> None:
    """Refuse what these rewriters do not compute as mmdet does: a batch of several images, NMS other than 'nms'."""
    if is_dynamic_batch(deploy_cfg) or batch_size != 1:
        raise InexactExportError(f"mmrmt's export of mmdet's {head} post-processing takes one image a batch; "
                                 'remove the batch axis (0) from onnx_config.dynamic_axes')
    if nms_cfg.get('type', 'nms') != 'nms':
        raise InexactExportError(f"the {head}'s test_cfg asks for NMS {nms_cfg.get('type')!r}, which the graph "
                                 "cannot compute as mmdet does; set its nms type to 'nms'")


def nms_within_groups(boxes: Tensor, scores: Tensor, groups: Tensor, iou_threshold: float, score_threshold: float,
                      max_num: int) -> Tuple[Tensor, Tensor]:
    """NMS among the boxes of each group, as mmcv's ``batched_nms`` of one image.

    Args:
        boxes (Tensor): (n, 4) boxes, x1 y1 x2 y2, none below 0.
        scores (Tensor): (n, ) their scores.
        groups (Tensor): (n, ) the group (level, class) of each box; boxes of different groups never suppress
            each other.
        iou_threshold (float): A box overlapping a kept box of its group by more than this IoU is dropped.
        score_threshold (float): Only boxes scoring above this are kept.
        max_num (int): At most this many boxes are kept, the highest scoring.

    Returns:
        tuple[Tensor, Tensor]: The kept boxes with their scores, (k, 5), by descending score, and their groups, (k, ).
    """
    shifted = boxes + (groups.to(boxes) * (boxes.max() + 1))[:, None]
    selected = ONNXNMSop.apply(shifted[None], scores[None, None], max_num, iou_threshold, score_threshold)[:, 2]
    kept_scores, order = scores[selected].sort(descending=True)
    kept = selected[order]
    return torch.cat([boxes[kept], kept_scores[:, None]], dim=1), groups[kept]


def rpn_head_predict_by_feat(self, cls_scores: List[Tensor], bbox_preds: List[Tensor],
                             score_factors: Optional[List[Tensor]] = None,
                             batch_img_metas: Optional[List[dict]] = None, cfg: Optional[dict] = None,
                             rescale: bool = False, with_nms: bool = True, **kwargs) -> Tuple[Tensor, Tensor]:
    """mmdet's ``RPNHead.predict_by_feat`` for the graph: proposals (1, k, 5) with scores, and (1, k) zeros."""
    cfg = self.test_cfg if cfg is None else cfg
    # mmdeploy finds a rewriter's context from its caller's frame: asked here, in the rewriter itself
    check_one_image(FUNCTION_REWRITER.get_context().cfg, cls_scores[0].shape[0], cfg.nms, 'RPN')
    priors = self.prior_generator.grid_priors([score.shape[-2:] for score in cls_scores],
                                              dtype=cls_scores[0].dtype, device=cls_scores[0].device)
    level_scores, level_deltas, level_priors, level_ids = [], [], [], []
    for level, (cls_score, bbox_pred, level_prior) in enumerate(zip(cls_scores, bbox_preds, priors)):
        cls_score = cls_score[0].permute(1, 2, 0)
        scores = cls_score.reshape(-1).sigmoid() if self.use_sigmoid_cls else cls_score.reshape(-1, 2).softmax(-1)[:, 0]
        deltas = bbox_pred[0].permute(1, 2, 0).reshape(-1, self.bbox_coder.encode_size)
        if cfg.get('nms_pre', -1) > 0:  # mmdeploy's topk rewriter caps k at the level's number of anchors
            scores, top = scores.topk(cfg.nms_pre)
            deltas, level_prior = deltas[top], level_prior[top]
        level_scores.append(scores)
        level_deltas.append(deltas)
        level_priors.append(level_prior)
        level_ids.append(torch.full_like(scores, level, dtype=torch.long))
    scores = torch.cat(level_scores)
    boxes = self.bbox_coder.decode(torch.cat(level_priors)[None], torch.cat(level_deltas)[None],
                                   max_shape=batch_img_metas[0]['img_shape'])[0]
    if cfg.get('min_bbox_size', -1) >= 0:  # mmdet drops these boxes: here they score below every threshold
        sizes = boxes[:, 2:] - boxes[:, :2]
        scores = torch.where((sizes > cfg.min_bbox_size).all(-1), scores, scores.new_tensor(-float('inf')))
    proposals, _ = nms_within_groups(boxes, scores, torch.cat(level_ids), cfg.nms.iou_threshold, -float('inf'),
                                     cfg.max_per_img)
    return proposals[None], proposals.new_zeros(proposals.shape[:1], dtype=torch.long)[None]


def bbox_head_predict_by_feat(self, rois: Tensor, cls_scores: Tensor, bbox_preds: Tensor,
                              batch_img_metas: Sequence[dict], rcnn_test_cfg: Optional[dict] = None,
                              rescale: bool = False) -> Tuple[Tensor, Tensor]:
    """mmdet's ``BBoxHead.predict_by_feat`` for the graph (rois (1, n, 5)): detections (1, k, 5) and labels (1, k)."""
    check_one_image(FUNCTION_REWRITER.get_context().cfg, rois.shape[0], rcnn_test_cfg.nms, 'RoI head')
    scores = self.loss_cls.get_activation(cls_scores) if self.custom_cls_channels else F.softmax(cls_scores, -1)
    boxes = self.bbox_coder.decode(rois[..., 1:], bbox_preds, max_shape=batch_img_metas[0]['img_shape'])
    num_rois, num_classes = rois.shape[1], self.num_classes
    boxes = boxes.reshape(num_rois, -1, 4).expand(num_rois, num_classes, 4)  # class-agnostic: one box for all
    labels = torch.arange(num_classes, device=rois.device).expand(num_rois, num_classes)
    dets, labels = nms_within_groups(boxes.reshape(-1, 4), scores[0, :, :num_classes].reshape(-1), labels.reshape(-1),
                                     rcnn_test_cfg.nms.iou_threshold, rcnn_test_cfg.score_thr,
                                     rcnn_test_cfg.max_per_img)
    return dets[None], labels[None]
