"""Inference on a user's images (the image demo and ``make demo``'s picture)."""
from .image_inference import build_inferencer, predict_images
from .image_inputs import (check_image_bounds, check_image_pixels, check_test_scale, collect_images, output_files,
                           read_image, read_image_sizes)

__all__ = ['build_inferencer', 'predict_images', 'check_image_bounds', 'check_image_pixels', 'check_test_scale',
           'collect_images', 'output_files', 'read_image', 'read_image_sizes']
