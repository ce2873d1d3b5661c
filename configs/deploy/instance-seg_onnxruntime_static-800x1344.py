# Mask R-CNN for onnxruntime at 800x1344 (width 1344, height 800: the COCO
# configs' 1333x800 scale to multiples of 32): every image is resized to fill
# the input, so that the graph clips proposals and boxes where torch does.
_base_ = ['./instance-seg_onnxruntime_static.py']

onnx_config = dict(input_shape=[1344, 800])
