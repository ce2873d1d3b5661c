"""A model in tensor mode exported to ONNX, with the export forms of our backbones and exact ones of mmdet's
layers."""
from mmrmt.amp import float32_roi_pooling
from .backbone_forms import EXPORT_FORMS, export_implementation
from .export_forms import exact_roi_min_side, export_forms
from .fixed_shapes import exports_fixed_shapes, fixed_shape_export, is_exporting
from .image_scan import graph_inputs, scan_over_images
from .onnx_export import (DYNAMO_ANY_SIZE_FROM, EXPORTERS, DynamicExportError, check_dynamo_any_size, check_opset,
                          export_onnx)
from .tensor_mode import MIN_DYNAMIC_SIZE, TensorModeModel, random_proposals

__all__ = ['DYNAMO_ANY_SIZE_FROM', 'DynamicExportError', 'EXPORTERS', 'EXPORT_FORMS', 'MIN_DYNAMIC_SIZE',
           'TensorModeModel', 'check_dynamo_any_size', 'check_opset', 'exact_roi_min_side',
           'export_forms', 'export_implementation', 'export_onnx', 'exports_fixed_shapes', 'fixed_shape_export',
           'float32_roi_pooling', 'graph_inputs', 'is_exporting', 'random_proposals', 'scan_over_images']
