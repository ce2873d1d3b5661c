from .conv_ffn import ConvFFN, FastConvFFN
from .depthwise_conv import ChannelsLastDWConv
from .norm_projection import norm_then_project

__all__ = ['ChannelsLastDWConv', 'ConvFFN', 'FastConvFFN', 'norm_then_project']
