# Instance segmentation (Mask R-CNN) for onnxruntime, at the size the test
# pipeline gives the conversion image; the 28x28 mask logits of each
# detection come out of the graph and are pasted outside it, as mmdet does.
# opset 16: the first whose RoiAlign samples as mmcv's aligned RoIAlign
# (half_pixel); the route refuses an aligned RoIAlign below it. The RPN's and
# RoI head's NMS follow the model's test_cfg (mmrmt's rewriters), not the
# post_processing thresholds of ./_base_/detection.py. The conversion image
# must fill the input (see instance-seg_onnxruntime_static-800x1344.py).
_base_ = ['./_base_/detection.py']

onnx_config = dict(opset_version=16, output_names=['dets', 'labels', 'masks'])
codebase_config = dict(post_processing=dict(export_postprocess_mask=False))
