"""MaSA as a module for any network: channels-first maps in and out, its decay built inside."""
from typing import Optional, Tuple

import torch
from torch import nn

from ..arch import BOOL, NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL, check_arg
from ..input_check import check_map_input
from .attention_maps import AttentionMaps, query_maps
from .implementations import implementation


class ManhattanSelfAttention2d(nn.Module):
    """Manhattan self-attention (MaSA) of RMT on (N, C, H, W) feature maps.

    The attention of an RMT block (:class:`.attention.ManhattanSelfAttention`,
    the same function and parameters) with its relative position
    (:class:`.relative_position.ManhattanRelPos`: rotary q/k and the
    per-head decay gamma_h ** Manhattan distance, built inside for each input
    size): ``softmax(q k^T / sqrt(d) + log-decay) v`` per head, over all
    tokens or along rows then columns, plus the local context enhancement (a
    5x5 depthwise conv of v), through an output projection. Any H and W;
    channels-first in and out, as a conv layer; no residual and no norm (add
    them around it as the host network does). :meth:`attention_maps` gives
    what it weighs the tokens by for one query token (decay prior and
    attention per head).

    Example:
        >>> import torch
        >>> from mmrmt.models import ManhattanSelfAttention2d
        >>> masa = ManhattanSelfAttention2d(64, num_heads=4, decomposed=True)
        >>> masa(torch.randn(2, 64, 30, 45)).shape
        torch.Size([2, 64, 30, 45])

    In a config (after ``custom_imports=dict(imports=['mmrmt'])``), build it
    with ``MODELS.build(dict(type='ManhattanSelfAttention2d', embed_dims=64,
    num_heads=4))``.

    Args:
        embed_dims (int): Channels C of the input and the output.
        num_heads (int): Attention heads; ``embed_dims / num_heads`` must be
            even (the rotary turns channel pairs).
        decomposed (bool): Attend along rows, then along columns (cost linear
            in H and W, as RMT's high-resolution stages do) instead of over
            all H x W tokens. Defaults to False.
        init_value (float): Decay exponent of the first head: its decay rate
            is ``1 - 2 ** -init_value``. Defaults to 2 (RMT's).
        heads_range (float): How much the exponent grows over the heads (the
            last heads decay slowest). Defaults to 4 (RMT's early stages).
        impl (str): ``'fast'``, ``'flex'`` or ``'reference'``, as in :class:`.RMT`.
            Defaults to ``'fast'``.
    """

    def __init__(self, embed_dims: int, num_heads: int, decomposed: bool = False, init_value: float = 2.,
                 heads_range: float = 4., impl: str = 'fast') -> None:
        super().__init__()
        name = type(self).__name__
        classes = implementation(impl, name)
        for arg, value, kind in (('embed_dims', embed_dims, POSITIVE_INT), ('num_heads', num_heads, POSITIVE_INT),
                                 ('decomposed', decomposed, BOOL), ('init_value', init_value, POSITIVE_REAL),
                                 ('heads_range', heads_range, NON_NEGATIVE_REAL)):
            check_arg(name, arg, value, kind)
        if embed_dims % num_heads or embed_dims // num_heads % 2:
            raise ValueError(f'{name}: embed_dims / num_heads must be an even integer (the rotary encoding '
                             f'turns channel pairs), got {embed_dims} / {num_heads}.')
        self.embed_dims = embed_dims
        self.relpos = classes.relpos(embed_dims, num_heads, init_value, heads_range)
        self.attention = classes.attention(embed_dims, num_heads, decomposed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """MaSA of (N, C, H, W) ``x``, (N, C, H, W) (a channels-last tensor in memory)."""
        self.check_input(x)
        return self.attention(x.permute(0, 2, 3, 1), self.relpos).permute(0, 3, 1, 2)

    def attention_maps(self, x: torch.Tensor, query: Optional[Tuple[int, int]] = None) -> AttentionMaps:
        """The decay prior and the attention of every head at token ``query`` of (N, C, H, W) ``x``.

        Args:
            x (torch.Tensor): The input :meth:`forward` would take.
            query (tuple[int, int], optional): (y, x) of the query token;
                the centre if None.

        Returns:
            AttentionMaps: ``decay`` (heads, H, W) and ``attention``
            (N, heads, H, W), the weights of the tokens in the query's output.

        Raises:
            ValueError: Another input shape, or a query outside the map.
        """
        self.check_input(x)
        return query_maps(self.attention, self.relpos, x.permute(0, 2, 3, 1), query)

    def check_input(self, x: torch.Tensor) -> None:
        """Fail with one line unless ``x`` is an input the backbones would take too: (N, embed_dims, H, W),
        not empty, floating point of the module's dtype, on its device."""
        check_map_input(self, x, self.embed_dims, 'embed_dims', batch='N')
