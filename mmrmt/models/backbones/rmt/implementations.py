"""The implementations of RMT, picked by the ``impl`` argument of the modules that build them.

``'reference'``: the modules as the paper writes them, step by step (the
oracle of the tests). ``'fast'``: their subclasses, the same function with
the same parameters, faster (see docs/benchmark.md). ``'flex'``: the fast one
whose MaSA attends through FlexAttention, the decay added inside the kernel
(:mod:`.flex_attention`), where that runs fused: on CUDA and in compiled CPU
inference; elsewhere it computes as ``'fast'``. An implementation is
one row of :data:`IMPLEMENTATIONS`, a :class:`.block.Implementation`: every
class that differs between the two, which :class:`.backbone.RMT` (the stem),
its stages (relative position, blocks), their blocks (MaSA, FFN) and
:class:`.masa_2d.ManhattanSelfAttention2d` (relative position, MaSA) build.
Two more rows are the deployment side's (``mmrmt.deployment.export``), and
no ``impl``: the fast one with its relative position and MaSA in graph
form takes the fast row's place in a built model for an export, and the
fast one with its MaSA in plain torch ops for a FLOP count.
"""
from typing import Dict

from torch import nn

from .attention import ManhattanSelfAttention
from .block import Implementation, RMTBlock
from .fast_attention import FastManhattanSelfAttention
from .fast_block import FastRMTBlock, ImageChunkedStem
from .fast_ffn import FastConvFFN
from .fast_relative_position import FastManhattanRelPos
from .ffn import ConvFFN
from .flex_attention import FlexManhattanSelfAttention
from .relative_position import ManhattanRelPos

IMPLEMENTATIONS: Dict[str, Implementation] = {
    'fast': Implementation(stem=ImageChunkedStem, relpos=FastManhattanRelPos, block=FastRMTBlock,
                           attention=FastManhattanSelfAttention, ffn=FastConvFFN),
    'flex': Implementation(stem=ImageChunkedStem, relpos=FastManhattanRelPos, block=FastRMTBlock,
                           attention=FlexManhattanSelfAttention, ffn=FastConvFFN),
    'reference': Implementation(stem=nn.Sequential, relpos=ManhattanRelPos, block=RMTBlock,
                                attention=ManhattanSelfAttention, ffn=ConvFFN),
}


def implementation(impl: str, owner: str) -> Implementation:
    """The classes ``impl`` names; a one-line ``ValueError`` naming ``owner`` otherwise."""
    if not isinstance(impl, str) or impl not in IMPLEMENTATIONS:
        raise ValueError(f"{owner}: impl must be one of {tuple(IMPLEMENTATIONS)} ('fast': fused attention "
                         "with cached tables and lean blocks; 'flex': 'fast' attending through FlexAttention on CUDA "
                         "and in compiled CPU inference; 'reference': the paper's computation step "
                         f'by step), got {impl!r}.')
    return IMPLEMENTATIONS[impl]
