"""RMT's relative position: rotary q/k and the Manhattan decay of each stage."""
from typing import Tuple

import torch
from torch import nn


def rotate_pairs(x: torch.Tensor) -> torch.Tensor:
    """Map each channel pair (a, b) to (-b, a)."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def apply_rotary(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """Rotate each channel pair of ``x`` by its token's angle."""
    return x * cos + rotate_pairs(x) * sin


class ManhattanRelPos(nn.Module):
    """Rotary tables and Manhattan decay masks of one stage (upstream ``Relpos``).

    Each call computes its table afresh from the buffers ``angle`` (rotary
    frequency per channel) and ``decay`` (log-decay per head, log gamma_h),
    the only state, as in the upstream checkpoints.

    Args:
        embed_dims (int): Channels of the stage.
        num_heads (int): Heads of the stage.
        init_value (float): Decay exponent of the first head.
        heads_range (float): How much the exponent grows over the heads.
    """

    def __init__(self, embed_dims: int, num_heads: int, init_value: float, heads_range: float) -> None:
        super().__init__()
        head_dims = embed_dims // num_heads
        angle = 1.0 / (10000 ** torch.linspace(0, 1, head_dims // 2))
        self.register_buffer('angle', angle.repeat_interleave(2))
        heads = torch.arange(num_heads, dtype=torch.float)
        self.register_buffer('decay', torch.log(1 - 2 ** (-init_value - heads_range * heads / num_heads)))

    def rotary(self, height: int, width: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """sin and cos of token index x angle, each (height, width, head_dims)."""
        index = torch.arange(height * width).to(self.decay)
        phase = (index[:, None] * self.angle[None, :]).reshape(height, width, -1)
        return torch.sin(phase), torch.cos(phase)

    def decay_1d(self, length: int) -> torch.Tensor:
        """(heads, length, length) log-decay over |i - j|."""
        index = torch.arange(length).to(self.decay)
        return (index[:, None] - index[None, :]).abs() * self.decay[:, None, None]

    def decay_2d(self, height: int, width: int) -> torch.Tensor:
        """(heads, hw, hw) log-decay over the Manhattan distance of the tokens."""
        ys, xs = torch.meshgrid(torch.arange(height).to(self.decay),
                                torch.arange(width).to(self.decay), indexing='ij')
        grid = torch.stack((ys, xs), dim=-1).reshape(-1, 2)
        distance = (grid[:, None, :] - grid[None, :, :]).abs().sum(-1)
        return distance * self.decay[:, None, None]

    def decay_map(self, height: int, width: int, query: Tuple[int, int]) -> torch.Tensor:
        """(heads, h, w) decay prior of the token ``query`` = (y, x): gamma_h ** (|dy| + |dx|).

        The query's column of :meth:`decay_2d`, exponentiated, without the
        (hw, hw) table.
        """
        ys = torch.arange(height).to(self.decay)[:, None]
        xs = torch.arange(width).to(self.decay)[None, :]
        distance = (ys - query[0]).abs() + (xs - query[1]).abs()
        return (distance * self.decay[:, None, None]).exp()
