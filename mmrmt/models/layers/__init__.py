from .conv_ffn import ConvFFN
from .depthwise_conv import ChannelsLastDWConv
from .norm_projection import norm_then_project

__all__ = ['ChannelsLastDWConv', 'ConvFFN', 'norm_then_project']
