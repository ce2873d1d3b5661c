"""Manhattan self-attention (MaSA), full and decomposed, with its local context enhancement."""
from typing import NamedTuple, Tuple, Union

import torch
from torch import nn

from .depthwise_conv import ChannelsLastDWConv
from .relative_position import ManhattanRelPos, apply_rotary


class DecomposedWeights(NamedTuple):
    """The two attention maps of decomposed MaSA.

    Args:
        rows (torch.Tensor): (B, h, n, w, w): along each row, the first pass.
        columns (torch.Tensor): (B, w, n, h, h): along each column, applied
            to the row pass's output.
    """
    rows: torch.Tensor
    columns: torch.Tensor


def decayed_softmax(q: torch.Tensor, k: torch.Tensor, log_decay: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T + log_decay) over the keys: attention with the decay prior multiplied in."""
    return torch.softmax(q @ k.transpose(-1, -2) + log_decay, dim=-1)


def token_sequence(x: torch.Tensor) -> torch.Tensor:
    """(B, n, h, w, d) to (B, n, hw, d): each head's tokens in one sequence.

    Through the token-major layout, not one reshape that merges h and w: a
    runtime's attention fusion matched softmax(q k^T + mask) v across such a
    reshape and took the 5-D operands (docs/deployment.md, "What is dynamic").
    """
    batch, heads, height, width, dims = x.shape
    return x.permute(0, 2, 3, 1, 4).reshape(batch, height * width, heads, dims).transpose(1, 2)


def full_weights(q: torch.Tensor, k: torch.Tensor, decay_2d: torch.Tensor) -> torch.Tensor:
    """(B, n, hw, hw) attention over all tokens of (B, n, h, w, d) ``q`` and ``k``."""
    return decayed_softmax(token_sequence(q), token_sequence(k), decay_2d)


def row_weights(q: torch.Tensor, k: torch.Tensor, decay_w: torch.Tensor) -> torch.Tensor:
    """(B, h, n, w, w) attention along each row of (B, n, h, w, d) ``q`` and ``k``."""
    return decayed_softmax(q.transpose(1, 2), k.transpose(1, 2), decay_w)


def column_weights(q: torch.Tensor, k: torch.Tensor, decay_h: torch.Tensor) -> torch.Tensor:
    """(B, w, n, h, h) attention along each column of (B, n, h, w, d) ``q`` and ``k``."""
    return decayed_softmax(q.permute(0, 3, 1, 2, 4), k.permute(0, 3, 1, 2, 4), decay_h)


def full_masa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, decay_2d: torch.Tensor) -> torch.Tensor:
    """MaSA over all tokens of (B, n, h, w, d) ``q``, ``k``, ``v``; same shape."""
    out = full_weights(q, k, decay_2d) @ token_sequence(v)
    return out.view(v.shape)


def decomposed_masa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, decay_h: torch.Tensor,
                    decay_w: torch.Tensor) -> torch.Tensor:
    """MaSA along rows, then along columns of the row pass's output; (B, n, h, w, d) in and out."""
    v = (row_weights(q, k, decay_w) @ v.transpose(1, 2)).permute(0, 3, 2, 1, 4)  # (B, w, n, h, d)
    return (column_weights(q, k, decay_h) @ v).permute(0, 2, 3, 1, 4)


class LocalContextEnhancement(ChannelsLastDWConv):
    """LCE: a depthwise conv of v, added to MaSA's output (upstream ``lepe``).

    Args:
        embed_dims (int): Channels of v.
        kernel_size (int): Square kernel size. Defaults to 5.
    """

    def __init__(self, embed_dims: int, kernel_size: int = 5) -> None:
        super().__init__(embed_dims, kernel_size)


class ManhattanSelfAttention(nn.Module):
    """MaSA with its local context enhancement (upstream ``retention``), step by step.

    Per head, softmax(q k^T / sqrt(d) + log-decay) v with q and k rotated
    (:func:`.relative_position.apply_rotary`); full: over all tokens with the
    Manhattan decay; decomposed: along each row, then along each column of
    the row pass's output, each with its 1-D decay (linear cost). Plus the
    LCE of v, then the output projection. Channels-last in and out.

    Args:
        embed_dims (int): Channels.
        num_heads (int): Heads; ``embed_dims / num_heads`` must be even.
        decomposed (bool): Attend along rows then columns instead of over
            all tokens.
    """

    def __init__(self, embed_dims: int, num_heads: int, decomposed: bool) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dims = embed_dims // num_heads
        self.scale = self.head_dims ** -0.5
        self.decomposed = decomposed
        self.q_proj = nn.Linear(embed_dims, embed_dims)
        self.k_proj = nn.Linear(embed_dims, embed_dims)
        self.v_proj = nn.Linear(embed_dims, embed_dims)
        self.lepe = LocalContextEnhancement(embed_dims)
        self.out_proj = nn.Linear(embed_dims, embed_dims)

    def forward(self, x: torch.Tensor, relpos: ManhattanRelPos) -> torch.Tensor:
        """MaSA(x) + LCE(v) through the output projection, for (B, h, w, C) ``x``."""
        batch, height, width, channels = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        context = self.lepe(v)
        q, k = self.rotate(q, k * self.scale, relpos)
        v = self.split_heads(v)
        if self.decomposed:
            out = decomposed_masa(q, k, v, relpos.decay_1d(height), relpos.decay_1d(width))
        else:
            out = full_masa(q, k, v, relpos.decay_2d(height, width))
        return self.out_proj(out.permute(0, 2, 3, 1, 4).reshape(batch, height, width, channels) + context)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, h, w, C) to (B, n, h, w, d)."""
        return x.view(*x.shape[:3], self.num_heads, -1).permute(0, 3, 1, 2, 4)

    def rotate(self, q: torch.Tensor, k: torch.Tensor,
               relpos: ManhattanRelPos) -> Tuple[torch.Tensor, torch.Tensor]:
        """(B, h, w, C) ``q`` and ``k`` split into heads and rotated, each (B, n, h, w, d)."""
        sin, cos = relpos.rotary(*q.shape[1:3])
        return apply_rotary(self.split_heads(q), sin, cos), apply_rotary(self.split_heads(k), sin, cos)

    def attention_weights(self, x: torch.Tensor,
                          relpos: ManhattanRelPos) -> Union[torch.Tensor, DecomposedWeights]:
        """The maps MaSA weighs v by for (B, h, w, C) ``x``: full, (B, n, hw, hw);
        decomposed, :class:`DecomposedWeights`."""
        height, width = x.shape[1:3]
        q, k = self.rotate(self.q_proj(x), self.k_proj(x) * self.scale, relpos)
        if self.decomposed:
            return DecomposedWeights(row_weights(q, k, relpos.decay_1d(width)),
                                     column_weights(q, k, relpos.decay_1d(height)))
        return full_weights(q, k, relpos.decay_2d(height, width))

    def attention_map(self, x: torch.Tensor, relpos: ManhattanRelPos, query: Tuple[int, int]) -> torch.Tensor:
        """(B, n, h, w): the weight of every token in the output of token ``query`` = (y, x).

        From :meth:`attention_weights`, the maps v is weighed by: full, the
        query's row; decomposed, the column pass's weights at the query times
        each row pass's weights at the query's column (what the two passes
        weigh each token by together).
        """
        batch, height, width = x.shape[:3]
        qy, qx = query
        weights = self.attention_weights(x, relpos)
        if isinstance(weights, DecomposedWeights):
            column = weights.columns[:, qx, :, qy]  # (B, n, h): over the rows y' of column qx
            rows = weights.rows[:, :, :, qx].transpose(1, 2)  # (B, n, h, w): row y' at (y', qx)
            return column[..., None] * rows
        return weights[:, :, qy * width + qx].view(batch, -1, height, width)
