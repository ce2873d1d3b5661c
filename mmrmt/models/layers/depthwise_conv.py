"""Depthwise convolution over channels-last maps."""
import torch
from torch import nn


class ChannelsLastDWConv(nn.Module):
    """A depthwise ``Conv2d`` (with bias) taking and returning (B, H, W, C).

    The convolution is stored as ``.conv`` so that state-dict keys read
    ``<name>.conv.weight``, as in the upstream checkpoints.

    Args:
        channels (int): Input and output channels.
        kernel_size (int): Square kernel size; padding keeps the size.
    """

    def __init__(self, channels: int, kernel_size: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, 1, kernel_size // 2, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
