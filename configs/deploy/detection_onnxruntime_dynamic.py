# Detectors (RetinaNet) for onnxruntime, any batch and image size.
_base_ = ['./detection_onnxruntime_static.py']

onnx_config = dict(dynamic_axes=dict(
    input={0: 'batch', 2: 'height', 3: 'width'}, dets={0: 'batch', 1: 'num_dets'}, labels={0: 'batch', 1: 'num_dets'}))
