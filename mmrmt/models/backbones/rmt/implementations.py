"""The two implementations of RMT, picked by the ``impl`` argument of the modules that build them.

``'reference'``: the modules as the paper writes them, step by step (the
oracle of the tests). ``'fast'``: their subclasses, the same function with
the same parameters, faster (see docs/benchmark.md).
"""
from typing import Dict, NamedTuple, Type

from torch import nn

from .attention import ManhattanSelfAttention
from .block import RMTStage
from .fast_attention import FastManhattanSelfAttention
from .fast_block import FastRMTStage, ImageChunkedStem
from .fast_relative_position import FastManhattanRelPos
from .relative_position import ManhattanRelPos


class Implementation(NamedTuple):
    """The classes of one implementation.

    Args:
        stem (type): Container of the stem's layers.
        stage (type): A stage of blocks.
        relpos (type): The relative position (rotary and decay tables).
        attention (type): MaSA, channels-last.
    """
    stem: Type[nn.Sequential]
    stage: Type[RMTStage]
    relpos: Type[ManhattanRelPos]
    attention: Type[ManhattanSelfAttention]


IMPLEMENTATIONS: Dict[str, Implementation] = {
    'fast': Implementation(ImageChunkedStem, FastRMTStage, FastManhattanRelPos, FastManhattanSelfAttention),
    'reference': Implementation(nn.Sequential, RMTStage, ManhattanRelPos, ManhattanSelfAttention),
}


def implementation(impl: str, owner: str) -> Implementation:
    """The classes ``impl`` names; a one-line ``ValueError`` naming ``owner`` otherwise."""
    if not isinstance(impl, str) or impl not in IMPLEMENTATIONS:
        raise ValueError(f"{owner}: impl must be one of {tuple(IMPLEMENTATIONS)} ('fast': fused attention "
                         "with cached tables and lean blocks; 'reference': the paper's computation step "
                         f'by step), got {impl!r}.')
    return IMPLEMENTATIONS[impl]
