"""ONNX export of mmrmt models and its check in onnxruntime (tools/deployment/pytorch2onnx.py).

onnx, onnxruntime and onnxscript come with the ``deploy`` extra
(``pip install -e .[deploy]``); they are imported only when used.
"""
from .onnx_export import EXPORTERS, check_opset, export_onnx
from .export_forms import exact_roi_min_side, export_forms
from .session import onnxruntime_session, run_session, session_options
from .tensor_mode import MIN_DYNAMIC_SIZE, TensorModeModel
from .verify import compare_with_onnxruntime, demo_image, relative_difference, verification_inputs

__all__ = ['EXPORTERS', 'MIN_DYNAMIC_SIZE', 'TensorModeModel', 'check_opset', 'compare_with_onnxruntime',
           'demo_image', 'exact_roi_min_side', 'export_onnx', 'export_forms', 'onnxruntime_session',
           'relative_difference', 'run_session', 'session_options', 'verification_inputs']
