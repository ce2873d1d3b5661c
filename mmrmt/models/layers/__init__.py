from .export_mode import is_exporting
from .norm import NORM_LAYERS, build_norm_layer, check_norm_cfg
from .norm_projection import norm_then_project

__all__ = ['NORM_LAYERS', 'build_norm_layer', 'check_norm_cfg', 'is_exporting', 'norm_then_project']
