"""Depthwise convolution over channels-last maps."""
import torch
import torch.nn.functional as F
from torch import nn


def depthwise_conv_channels_last(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                                 padding: int) -> torch.Tensor:
    """Depthwise conv of (B, H, W, C) ``x`` with a (C, 1, k, k) ``weight``, stride 1."""
    return F.conv2d(x.permute(0, 3, 1, 2), weight, bias, padding=padding,
                    groups=weight.shape[0]).permute(0, 2, 3, 1)


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
        # a buffer, not built per call: an exported graph then holds x + conv(x)'s kernel as one folded
        # constant (built per call, its index assignment was a ScatterND the TorchScript exporter left)
        centre_tap = torch.zeros(1, 1, kernel_size, kernel_size)
        centre_tap[..., kernel_size // 2, kernel_size // 2] = 1
        self.register_buffer('centre_tap', centre_tap, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)

    def residual_weight(self) -> torch.Tensor:
        """The kernel with 1 added to its centre tap: conv with it is x + conv(x)."""
        return self.conv.weight + self.centre_tap

    def forward_residual(self, x: torch.Tensor) -> torch.Tensor:
        """``x + self(x)`` as one convolution (no sum tensor, no gradient accumulation)."""
        return depthwise_conv_channels_last(x, self.residual_weight(), self.conv.bias,
                                            self.conv.padding[0])
