from . import run_mode
from .image_chunks import in_image_chunks
from .norm import NORM_LAYERS, build_norm_layer, check_norm_cfg
from .norm_projection import norm_then_project
from .plain_attention import attention_runs, plain_attention, scaled_dot_product_attention, within_export_budget

__all__ = ['NORM_LAYERS', 'attention_runs', 'build_norm_layer', 'check_norm_cfg', 'in_image_chunks',
           'norm_then_project', 'plain_attention', 'run_mode', 'scaled_dot_product_attention', 'within_export_budget']
