"""RMT's block and stage, as the paper writes them, and the classes of an implementation they are built of."""
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple, Type

import torch
from timm.layers import DropPath
from torch import nn

from ...layers import build_norm_layer
from ..base_backbone import call_block
from ..implementation import BackboneImplementation
from .depthwise_conv import ChannelsLastDWConv
from .ffn import ConvFFN
from .relative_position import ManhattanRelPos


def layer_scaled(branch: torch.Tensor, gamma: Optional[torch.Tensor]) -> torch.Tensor:
    """``gamma * branch``, or ``branch`` without layer scale."""
    return branch if gamma is None else gamma * branch


@dataclass(frozen=True)
class Implementation(BackboneImplementation):
    """The classes of one implementation of RMT, what its modules build (one row of
    :data:`.implementations.IMPLEMENTATIONS`): ``block`` (built by :class:`RMTStage`) and ``attention``
    (MaSA, channels-last, built by :class:`RMTBlock` and :class:`.masa_2d.ManhattanSelfAttention2d`), and

    Args:
        stem (type): Container of the stem's layers (built by :class:`.backbone.RMT`).
        relpos (type): A stage's relative position, rotary and decay tables
            (built by :class:`RMTStage` and :class:`.masa_2d.ManhattanSelfAttention2d`).
        ffn (type): A block's FFN (built by :class:`RMTBlock`).
    """
    stem: Type[nn.Sequential]
    relpos: Type[ManhattanRelPos]
    ffn: Type[ConvFFN]


class RMTBlock(nn.Module):
    """CPE, then pre-norm MaSA and FFN, each a residual branch with optional layer scale.

    Args:
        embed_dims (int): Channels.
        num_heads (int): Attention heads.
        mlp_ratio (float): FFN hidden channels / embed_dims.
        decomposed (bool): Decomposed (row/column) or full MaSA.
        drop_path (float): Stochastic depth rate.
        layer_scale (float, optional): Initial layer-scale value, or None
            for no layer scale.
        implementation (Implementation): Whose ``attention`` and ``ffn``
            classes the block builds.
    """

    def __init__(self, embed_dims: int, num_heads: int, mlp_ratio: float, decomposed: bool,
                 drop_path: float = 0., layer_scale: Optional[float] = None, *,
                 implementation: Implementation) -> None:
        super().__init__()
        self.pos = ChannelsLastDWConv(embed_dims, 3)
        self.retention_layer_norm = nn.LayerNorm(embed_dims, eps=1e-6)
        self.retention = implementation.attention(embed_dims, num_heads, decomposed)
        self.final_layer_norm = nn.LayerNorm(embed_dims, eps=1e-6)
        self.ffn = implementation.ffn(embed_dims, int(mlp_ratio * embed_dims))
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()
        if layer_scale is not None:
            self.gamma_1 = nn.Parameter(torch.full((1, 1, 1, embed_dims), float(layer_scale)))
            self.gamma_2 = nn.Parameter(torch.full((1, 1, 1, embed_dims), float(layer_scale)))
        else:
            self.gamma_1 = self.gamma_2 = None

    def forward(self, x: torch.Tensor, relpos: ManhattanRelPos) -> torch.Tensor:
        """The block on channels-last (B, h, w, C) ``x``."""
        x = self.add_position(x)
        x = x + self.drop_path(layer_scaled(self.retention(self.retention_layer_norm(x), relpos), self.gamma_1))
        return x + self.drop_path(layer_scaled(self.ffn(self.final_layer_norm(x)), self.gamma_2))

    def add_position(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` plus its conditional positional encoding (the CPE, a 3x3 depthwise conv)."""
        return x + self.pos(x)

    def attention_input(self, x: torch.Tensor) -> torch.Tensor:
        """The (B, h, w, C) tokens the block's MaSA attends over for block input ``x``: the
        pre-norm of ``x`` plus its CPE."""
        return self.retention_layer_norm(self.add_position(x))


class ConvDownsample(nn.Module):
    """3x3 stride-2 conv then a norm, channels-last in and out.

    Args:
        in_channels (int): Input channels.
        out_channels (int): Output channels.
        norm_cfg (dict): Norm after the conv.
    """

    def __init__(self, in_channels: int, out_channels: int, norm_cfg: dict) -> None:
        super().__init__()
        self.reduction = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.norm = build_norm_layer(norm_cfg, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.reduction(x.permute(0, 3, 1, 2))).permute(0, 2, 3, 1)


class RMTStage(nn.Module):
    """The blocks of one stage, its relative position and its downsampling.

    Args:
        embed_dims (int): Channels of the stage.
        depth (int): Number of blocks.
        num_heads (int): Attention heads.
        mlp_ratio (float): FFN expansion.
        init_value (float): First decay exponent.
        heads_range (float): Decay exponent range over the heads.
        decomposed (bool): Decomposed MaSA.
        drop_paths (Sequence[float]): One stochastic depth rate per block.
        layer_scale (float, optional): Layer scale initial value or None.
        out_channels (int, optional): Channels after the downsampling; None
            for the last stage (no downsampling).
        norm_cfg (dict): Norm of the downsampling.
        with_cp (bool): Activation checkpointing per block while training.
            Defaults to False.
        implementation (Implementation): Whose ``relpos`` and ``block``
            classes the stage builds (and its blocks their parts).
    """

    def __init__(self, embed_dims: int, depth: int, num_heads: int, mlp_ratio: float,
                 init_value: float, heads_range: float, decomposed: bool,
                 drop_paths: Sequence[float], layer_scale: Optional[float],
                 out_channels: Optional[int], norm_cfg: dict, with_cp: bool = False, *,
                 implementation: Implementation) -> None:
        super().__init__()
        self.with_cp = with_cp
        self.Relpos = implementation.relpos(embed_dims, num_heads, init_value, heads_range)
        self.blocks = nn.ModuleList(
            implementation.block(embed_dims, num_heads, mlp_ratio, decomposed, drop_paths[i], layer_scale,
                                 implementation=implementation)
            for i in range(depth))
        self.downsample = (ConvDownsample(embed_dims, out_channels, norm_cfg)
                           if out_channels is not None else None)

    def forward(self, x: torch.Tensor, emit: Optional[Callable[[torch.Tensor], torch.Tensor]] = None
                ) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
        """The blocks, then the downsampling, on channels-last (B, h, w, C) ``x``.

        Returns ``emit`` of the blocks' output (None without ``emit``: the
        backbone emits only its ``out_indices``) and the next stage's input
        (None after the last stage). The output is emitted before it is
        downsampled, as upstream: backward then sums the output's two
        gradients in the same order, and so gives the same bits.
        """
        for block in self.blocks:
            x = call_block(block, x, self.Relpos, with_cp=self.with_cp)
        out = None if emit is None else emit(x)
        return out, (None if self.downsample is None else self.downsample(x))
