"""What mmdeploy 1.3.1 needs to export mmrmt's models right with torch 2.14 and onnxruntime.

Importing this module imports mmdeploy (the ``mmdeploy`` extra) and
registers, for the backends of :data:`SUPPORTED_BACKENDS`, rewriters that
take precedence over mmdeploy's default ones (mmdeploy applies a
backend's own rewriter instead of its default):

* mmcv's ``RoIAlign`` symbolic: mmdeploy's imports ``_cast_Long`` from
  ``torch.onnx.symbolic_opset9``, which torch 2.14 no longer has, so every
  Mask R-CNN export died. Ours writes the same ONNX ``RoiAlign`` with a plain
  ``Cast``, and only at opset 16 and later, whose ``half_pixel`` coordinates
  are mmcv's ``aligned=True`` sampling; below 16 onnxruntime clamps each RoI
  to at least one feature-map pixel, which mmcv does not, so an aligned
  RoIAlign below opset 16 is refused rather than exported approximately.
* ``torch.nn.functional.adaptive_avg_pool2d``: mmdeploy's default replaces
  it by ``avg_pool2d`` with kernel and stride ``int(size / bins)``, which is
  the adaptive pooling only when the bins divide the map (UperNet's pyramid
  pooling over 1, 2, 3 and 6 bins of a 16x16 map does not: its logits were
  0.39 off). Ours averages the adaptive bins with slices and means
  (:func:`mmrmt.deployment.export.export_forms.adaptive_average_pool2d`), exact at
  any size, static or dynamic, and at opset 11.
* the forwards of mmrmt's RMT, ResT and ``ManhattanSelfAttention2d``: run
  with their layers in their export forms
  (:func:`mmrmt.deployment.export.export_implementation`), as mmrmt's own
  export runs them.
* mmdet's RPN and RoI box head post-processing: mmdeploy's rewrites give
  other proposals and detections than mmdet (NMS across the RPN's levels,
  each class scored with the box of the RoI's best class, the deploy
  config's thresholds); ours compute mmdet's, from the model's ``test_cfg``
  (:mod:`mmrmt.deployment.mmdeploy.two_stage`).
* ``torch.onnx.export``, as mmdeploy calls it: by torch's TorchScript
  exporter (torch 2.14's defaults to the dynamo exporter, which rejects the
  ``dynamic_axes`` mmdeploy passes).

``import mmrmt`` in a process that has imported mmdeploy (its own
``tools/deploy.py`` or ``mmdeploy.apis.torch2onnx``, reading a config's
``custom_imports=dict(imports=['mmrmt'])``) imports this module too
(:mod:`mmrmt.openmmlab_layer`): mmdeploy's own route converts with these
rewriters as :func:`.route.convert` does.
"""
from typing import List

import torch
from mmdeploy.core import FUNCTION_REWRITER, SYMBOLIC_REWRITER
from mmdeploy.utils import get_ir_config

from ..export import export_implementation
from ..export.export_forms import adaptive_average_pool2d
from .errors import InexactExportError
from .two_stage import bbox_head_predict_by_feat, rpn_head_predict_by_feat

#: The backends for which the rewriters are registered; the mmdeploy route refuses others.
SUPPORTED_BACKENDS = ('onnxruntime', )

#: The first opset whose ``RoiAlign`` has ``half_pixel`` coordinates (mmcv's ``aligned=True``).
ALIGNED_ROI_ALIGN_OPSET = 16

ONNX_INT64 = 7  # TensorProto.INT64

#: The forwards of mmrmt's modules that hold layers with export forms.
EXPORT_FORM_FORWARDS = ('mmrmt.models.backbones.rmt.backbone.RMT.forward', 'mmrmt.models.backbones.rest.ResT.forward',
                        'mmrmt.models.backbones.rmt.masa_2d.ManhattanSelfAttention2d.forward')


def torchscript_export(*args, **kwargs):
    """mmdeploy's ``torch.onnx.export`` call, by the TorchScript exporter unless it names one."""
    return FUNCTION_REWRITER.get_context().origin_func(*args, **{'dynamo': False, **kwargs})


def roi_align_symbolic(g, features, rois, output_size: List[int], spatial_scale: float, sampling_ratio: int,
                       pool_mode: str, aligned: bool):
    """ONNX ``RoiAlign`` for mmcv's ``RoIAlignFunction`` (rois: R x 5, the image index first)."""
    # mmdeploy finds a rewriter's context from its caller's frame: asked here, in the rewriter itself
    opset = get_ir_config(SYMBOLIC_REWRITER.get_context().cfg).get('opset_version', 11)
    if aligned and opset < ALIGNED_ROI_ALIGN_OPSET:
        raise InexactExportError(
            f"mmcv's RoIAlign(aligned=True) exports exactly only at opset {ALIGNED_ROI_ALIGN_OPSET} and later "
            f'(ONNX RoiAlign half_pixel); the deploy config asks for opset {opset}: set '
            f'onnx_config.opset_version={ALIGNED_ROI_ALIGN_OPSET}')
    image_column = g.op('Constant', value_t=torch.tensor(0, dtype=torch.long))
    box_columns = g.op('Constant', value_t=torch.tensor([1, 2, 3, 4], dtype=torch.long))
    batch_indices = g.op('Cast', g.op('Gather', rois, image_column, axis_i=1), to_i=ONNX_INT64)
    boxes = g.op('Gather', rois, box_columns, axis_i=1)
    attributes = dict(output_height_i=output_size[0], output_width_i=output_size[1], spatial_scale_f=spatial_scale,
                      sampling_ratio_i=sampling_ratio, mode_s=pool_mode)
    if opset >= ALIGNED_ROI_ALIGN_OPSET:
        attributes['coordinate_transformation_mode_s'] = 'half_pixel' if aligned else 'output_half_pixel'
    return g.op('RoiAlign', features, boxes, batch_indices, **attributes)


def forward_in_export_forms(self, *args, **kwargs):
    """The module's own forward, with its layers in their export forms."""
    with export_implementation(self):
        return FUNCTION_REWRITER.get_context().origin_func(self, *args, **kwargs)


for backend in SUPPORTED_BACKENDS:
    for forward in EXPORT_FORM_FORWARDS:
        FUNCTION_REWRITER.register_rewriter(forward, backend=backend)(forward_in_export_forms)
    SYMBOLIC_REWRITER.register_symbolic('mmcv.ops.roi_align.__self__', backend=backend)(roi_align_symbolic)
    FUNCTION_REWRITER.register_rewriter('torch.nn.functional.adaptive_avg_pool2d',
                                        backend=backend)(adaptive_average_pool2d)
    FUNCTION_REWRITER.register_rewriter('mmdet.models.dense_heads.rpn_head.RPNHead.predict_by_feat',
                                        backend=backend)(rpn_head_predict_by_feat)
    FUNCTION_REWRITER.register_rewriter('mmdet.models.roi_heads.bbox_heads.bbox_head.BBoxHead.predict_by_feat',
                                        backend=backend)(bbox_head_predict_by_feat)
    FUNCTION_REWRITER.register_rewriter('torch.onnx.export', backend=backend)(torchscript_export)
