from .conv_ffn import ConvFFN, FastConvFFN
from .depthwise_conv import ChannelsLastDWConv
from .export_mode import is_exporting
from .norm_projection import norm_then_project

__all__ = ['ChannelsLastDWConv', 'ConvFFN', 'FastConvFFN', 'is_exporting', 'norm_then_project']
