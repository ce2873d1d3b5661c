from .arch import check_heads_divide_dims, resolve_arch
from .depthwise_conv import ChannelsLastDWConv
from .pyramid_backbone import PyramidBackbone

__all__ = ['check_heads_divide_dims', 'resolve_arch', 'ChannelsLastDWConv', 'PyramidBackbone']
