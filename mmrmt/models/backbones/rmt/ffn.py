"""RMT's feed-forward network: a depthwise conv between its two linears."""
import torch
from torch import nn

from .depthwise_conv import ChannelsLastDWConv


class ConvFFN(nn.Module):
    """fc1 -> GELU -> x + depthwise 3x3 conv(x) -> fc2, channels-last, step by step.

    Args:
        embed_dims (int): Input and output channels.
        hidden_dims (int): Hidden channels.
    """

    def __init__(self, embed_dims: int, hidden_dims: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(embed_dims, hidden_dims)
        self.act = nn.GELU()
        self.dwconv = ChannelsLastDWConv(hidden_dims, 3)
        self.fc2 = nn.Linear(hidden_dims, embed_dims)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.fc1(x))
        return self.fc2(x + self.dwconv(x))
