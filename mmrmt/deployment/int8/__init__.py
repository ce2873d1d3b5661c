"""int8 quantisation of an exported graph in onnxruntime, calibrated on images the model preprocesses.

Importing it imports onnxruntime's quantisation tools (the ``deploy`` extra).
"""
from .calibration import calibration_feeds, preprocessed_images, usable_images
from .quantize import quantize_graph

__all__ = ['calibration_feeds', 'preprocessed_images', 'quantize_graph', 'usable_images']
