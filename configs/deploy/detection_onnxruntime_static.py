# Detectors (RetinaNet) for onnxruntime, at the size the test pipeline gives the conversion image.
_base_ = ['./_base_/detection.py']
