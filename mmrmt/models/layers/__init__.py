from .arch import resolve_arch
from .depthwise_conv import ChannelsLastDWConv
from .pyramid_backbone import PyramidBackbone

__all__ = ['resolve_arch', 'ChannelsLastDWConv', 'PyramidBackbone']
