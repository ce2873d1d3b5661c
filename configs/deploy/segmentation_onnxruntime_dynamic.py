# Segmentors (UperNet) for onnxruntime, any batch and image size.
_base_ = ['./segmentation_onnxruntime_static.py']

onnx_config = dict(dynamic_axes=dict(
    input={0: 'batch', 2: 'height', 3: 'width'}, output={0: 'batch', 2: 'height', 3: 'width'}))
