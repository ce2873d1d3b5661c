from .arch import check_heads_divide_dims, resolve_arch
from .conv_ffn import ConvFFN
from .depthwise_conv import ChannelsLastDWConv
from .export_mode import is_exporting
from .norm_projection import norm_then_project
from .pyramid_backbone import PyramidBackbone

__all__ = ['check_heads_divide_dims', 'resolve_arch', 'ChannelsLastDWConv', 'ConvFFN', 'PyramidBackbone',
           'is_exporting', 'norm_then_project']
