# Segmentors (UperNet) for onnxruntime, at the size the test pipeline gives
# the conversion image; the graph returns each pixel's class (argmax in the graph).
_base_ = ['./_base_/onnxruntime.py']

codebase_config = dict(type='mmseg', task='Segmentation', with_argmax=True)
