"""What a MaSA weighs the tokens by for one query token: its decay prior and its attention."""
from typing import NamedTuple, Optional, Tuple

import torch

from .attention import ManhattanSelfAttention
from .relative_position import ManhattanRelPos


class AttentionMaps(NamedTuple):
    """The decay prior and the attention of every head of one MaSA at one query token.

    Args:
        gammas (torch.Tensor): (heads,) decay rate gamma_h of each head.
        decay (torch.Tensor): (heads, h, w) gamma_h ** Manhattan distance of
            each token to the query (1 at the query).
        attention (torch.Tensor): (B, heads, h, w) weight of each token in the
            query token's output, per image (each map sums to 1).
        query (tuple[int, int]): (y, x) of the query token on the (h, w) grid.
    """
    gammas: torch.Tensor
    decay: torch.Tensor
    attention: torch.Tensor
    query: Tuple[int, int]


def check_query(query: Optional[Tuple[int, int]], height: int, width: int) -> Tuple[int, int]:
    """``query`` as a (y, x) tuple, the grid's centre if None.

    Raises:
        ValueError: The query lies outside the (height, width) grid.
    """
    if query is None:
        return height // 2, width // 2
    y, x = query
    if not (0 <= y < height and 0 <= x < width):
        raise ValueError(f'query ({y}, {x}) is outside the {height}x{width} token grid; '
                         f'give 0 <= y < {height} and 0 <= x < {width}.')
    return int(y), int(x)


def query_maps(attention: ManhattanSelfAttention, relpos: ManhattanRelPos, x: torch.Tensor,
               query: Optional[Tuple[int, int]] = None) -> AttentionMaps:
    """The maps of ``attention`` (with its relative position ``relpos``) at ``query``.

    Args:
        attention (ManhattanSelfAttention): The MaSA, reference or fast.
        relpos (ManhattanRelPos): Its relative position (rotary and decay).
        x (torch.Tensor): (B, h, w, C) the tokens it attends over (after the
            block's pre-norm).
        query (tuple[int, int], optional): (y, x) token; the centre if None.
    """
    height, width = x.shape[1:3]
    query = check_query(query, height, width)
    return AttentionMaps(relpos.decay.exp(), relpos.decay_map(height, width, query),
                         attention.attention_map(x, relpos, query), query)
