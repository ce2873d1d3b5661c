"""mmrmt's rewriters of mmdet's two-stage post-processing (mmrmt/deployment/mmdeploy/two_stage.py), run as
mmdeploy runs them while it exports (its RewriterContext, onnxruntime backend), give mmdet's own proposals and
detections: per-level RPN NMS without a score threshold, each class with its own box. mmdeploy's rewrites they
replace give others on the same inputs.

The heads are those of the tiny test Mask R-CNN; their inputs are random logits, box deltas and RoIs (the RPN's
logits around -6, so that proposals score below mmdeploy's 0.05 too; the RoI head's of std 1 over 10 RoIs, so
that several classes of one RoI score above the 0.05 threshold). Both sides compute the same float32 ops on
coordinates below 64 px: a few roundings of 64 * 6e-8, so boxes agree to 1e-4 px and scores exactly enough for
1e-6.
"""
from pathlib import Path

import mmdeploy.codebase.mmdet.models  # noqa: F401  (mmdeploy's rewrites, registered as in its export)
import pytest
import torch
from mmdeploy.core import RewriterContext
from mmengine.config import Config

import mmrmt.deployment.mmdeploy  # noqa: F401  (ours, which take precedence for onnxruntime)
from mmrmt.utils import build_cpu_model

REPO = Path(__file__).resolve().parents[3]
DEPLOY_CFG = Config.fromfile(str(REPO / 'configs' / 'deploy' / 'instance-seg_onnxruntime_static.py'))
IMAGE = 64  # the test config's 64x64 input
META = [dict(img_shape=(IMAGE, IMAGE), scale_factor=(1., 1.), ori_shape=(IMAGE, IMAGE))]
BOX_TOLERANCE, SCORE_TOLERANCE = 1e-4, 1e-6


@pytest.fixture(scope='module')
def model():
    cfg = Config.fromfile(str(REPO / 'tests' / 'data' / 'configs' / 'mask-rcnn_rmt-tiny_fpn_test.py'))
    cfg.model.backbone.init_cfg = None
    torch.manual_seed(0)
    return build_cpu_model(cfg, quiet=True)


def exported(head, *args, **kwargs):
    """What ``head.predict_by_feat`` computes under mmdeploy's rewriters for onnxruntime (as in its export)."""
    with torch.no_grad(), RewriterContext(cfg=DEPLOY_CFG, backend='onnxruntime', opset=16):
        return head.predict_by_feat(*args, **kwargs)  # looked up in the context, which patches the class


def assert_same_detections(expected, dets, labels=None):
    assert dets.shape == (1, len(expected), 5)
    torch.testing.assert_close(dets[0, :, :4], expected.bboxes, atol=BOX_TOLERANCE, rtol=0)
    torch.testing.assert_close(dets[0, :, 4], expected.scores, atol=SCORE_TOLERANCE, rtol=0)
    if labels is not None:
        assert torch.equal(labels[0], expected.labels)


def test_rpn_proposals_are_mmdets(model):
    """NMS within each level (mmdeploy's: across levels, and thresholded at 0.05), at most max_per_img."""
    head = model.rpn_head
    torch.manual_seed(1)
    sizes = [IMAGE // stride for stride in (4, 8, 16, 32, 64)]
    anchors = head.num_base_priors
    cls_scores = [2 * torch.randn(1, anchors, size, size) - 6 for size in sizes]  # the kept ones partly below 0.05
    bbox_preds = [torch.randn(1, 4 * anchors, size, size) / 2 for size in sizes]
    with torch.no_grad():
        expected = head.predict_by_feat(cls_scores, bbox_preds, batch_img_metas=META, rescale=False)[0]
    assert len(expected) == head.test_cfg.max_per_img and expected.scores.min() < 0.05
    dets, _ = exported(head, cls_scores, bbox_preds, batch_img_metas=META, rescale=False)
    assert_same_detections(expected, dets)


def test_roi_detections_are_mmdets(model):
    """Each class scored with its own box (mmdeploy's: with the box of the RoI's best class)."""
    head = model.roi_head.bbox_head
    torch.manual_seed(2)
    corners = torch.rand(10, 2, 2) * IMAGE  # 10 RoIs: most of their classes kept, not only each one's best
    rois = torch.cat([torch.zeros(10, 1), corners.amin(1), corners.amax(1)], 1)
    cls_scores = torch.randn(10, head.num_classes + 1)
    bbox_preds = torch.randn(10, 4 * head.num_classes) / 2
    rcnn_cfg = model.roi_head.test_cfg
    with torch.no_grad():
        expected = head.predict_by_feat((rois, ), (cls_scores, ), (bbox_preds, ), META, rcnn_cfg)[0]
    assert len(expected) > len(rois)  # some RoIs give detections of several classes
    dets, labels = exported(head, rois[None], cls_scores[None], bbox_preds[None], META, rcnn_cfg)
    assert_same_detections(expected, dets, labels)


def test_batch_of_several_images_is_refused(model):
    from mmrmt.deployment.mmdeploy import InexactExportError
    anchors, sizes = model.rpn_head.num_base_priors, [IMAGE // stride for stride in (4, 8, 16, 32, 64)]
    cls_scores = [torch.randn(2, anchors, size, size) for size in sizes]
    bbox_preds = [torch.randn(2, 4 * anchors, size, size) for size in sizes]
    with pytest.raises(InexactExportError, match='one image a batch'):
        exported(model.rpn_head, cls_scores, bbox_preds, batch_img_metas=META * 2)
