from . import run_mode
from .image_chunks import in_image_chunks
from .norm import NORM_LAYERS, build_norm_layer, check_norm_cfg
from .norm_projection import norm_then_project

__all__ = ['NORM_LAYERS', 'build_norm_layer', 'check_norm_cfg', 'in_image_chunks', 'norm_then_project', 'run_mode']
