"""Inference on a user's images (the image demo and ``make demo``'s picture)."""
from .image_inference import build_inferencer, predict_images
from .image_inputs import collect_images, output_files, unreadable_images

__all__ = ['build_inferencer', 'predict_images', 'collect_images', 'output_files', 'unreadable_images']
