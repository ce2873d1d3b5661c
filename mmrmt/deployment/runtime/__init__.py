"""Exported graphs run in onnxruntime or OpenVINO: sessions, predictions, the check against torch, profiles."""
from mmrmt.cpu_features import CPUFeatures, cpu_features
from .graph_predictor import GraphError, GraphPredictor, evaluate_graph, proposal_feeds
from .graph_session import (PRECISIONS, RUNTIMES, RuntimeChoiceError, add_runtime_arguments, check_runtime, onnx_graph,
                            open_graph, open_session, runtime_label)
from .image_chunks import ImageChunkedSession, ImageChunks
from .onnxruntime_session import file_inputs, onnxruntime_session, run_session, session_options, shape_mismatch
from .profile import format_profile, time_per_op_type
from .two_stage import ROI_PRECISION, TwoStageSessions
from .verify import compare_with_onnxruntime, compare_with_runtime, demo_image, relative_difference, verification_inputs

__all__ = ['CPUFeatures', 'GraphError', 'GraphPredictor', 'ImageChunkedSession', 'ImageChunks', 'PRECISIONS',
           'ROI_PRECISION', 'RUNTIMES', 'RuntimeChoiceError', 'TwoStageSessions', 'add_runtime_arguments',
           'check_runtime', 'compare_with_onnxruntime', 'compare_with_runtime', 'cpu_features', 'demo_image',
           'evaluate_graph', 'file_inputs', 'format_profile', 'onnx_graph', 'onnxruntime_session', 'open_graph',
           'open_session', 'proposal_feeds', 'relative_difference', 'run_session', 'runtime_label', 'session_options',
           'shape_mismatch', 'time_per_op_type', 'verification_inputs']
