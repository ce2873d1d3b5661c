"""ONNX export of mmrmt models and its check in onnxruntime or OpenVINO (tools/deployment/pytorch2onnx.py).

onnx, onnxruntime and onnxscript come with the ``deploy`` extra
(``pip install -e .[deploy]``), openvino with the ``openvino``
extra; they are imported only when used.
"""
from .export_forms import exact_roi_min_side, export_forms
from .onnx_export import EXPORTERS, check_opset, export_onnx
from .runtimes import (PRECISIONS, RUNTIMES, RuntimeChoiceError, add_runtime_arguments, check_runtime, open_graph,
                       runtime_label)
from .session import onnxruntime_session, run_session, session_options
from .tensor_mode import MIN_DYNAMIC_SIZE, TensorModeModel
from .verify import compare_with_onnxruntime, compare_with_runtime, demo_image, relative_difference, verification_inputs

__all__ = ['EXPORTERS', 'MIN_DYNAMIC_SIZE', 'PRECISIONS', 'RUNTIMES', 'RuntimeChoiceError', 'TensorModeModel',
           'add_runtime_arguments', 'check_opset', 'check_runtime', 'compare_with_onnxruntime',
           'compare_with_runtime', 'demo_image', 'exact_roi_min_side', 'export_onnx', 'export_forms',
           'onnxruntime_session', 'open_graph', 'relative_difference', 'run_session', 'runtime_label',
           'session_options', 'verification_inputs']
