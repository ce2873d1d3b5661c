from .export_mode import is_exporting
from .norm import NORM_LAYERS, build_norm_layer, check_norm_cfg
from .norm_projection import norm_then_project
from .plain_attention import plain_attention, scaled_dot_product_attention

__all__ = ['NORM_LAYERS', 'build_norm_layer', 'check_norm_cfg', 'is_exporting', 'norm_then_project',
           'plain_attention', 'scaled_dot_product_attention']
