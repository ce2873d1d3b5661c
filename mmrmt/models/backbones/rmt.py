"""RMT: Retentive Networks Meet Vision Transformers, as a dense-prediction backbone.

Computes exactly what the upstream ImageNet checkpoints expect (see the
project's spec): a four-conv stem; stages of blocks with a positional conv
(CPE), Manhattan self-attention (MaSA) with rotary q/k and an additive
log-decay prior, decomposed along rows and columns or full, its local
context enhancement (LCE), and an FFN with a depthwise conv; conv
downsampling between stages; a LayerNorm on every emitted feature.
Parameter names are the upstream ones, so upstream files load unchanged.

This file is the model as the paper and the spec write it, top-down:
relative position, MaSA, block, stage, backbone. ``attn_impl='fast'`` (the
default) swaps in subclasses from :mod:`.rmt_fast` that compute the same
function faster, with the same parameters.
"""
from typing import Dict, List, Optional, Sequence, Tuple, Type, Union

import torch
from mmcv.cnn import build_norm_layer
from timm.layers import DropPath, trunc_normal_
from torch import nn

from mmrmt.registry import register_backbone
from ..layers import ChannelsLastDWConv, ConvFFN
from .arch import (BOOL, NON_NEGATIVE_INT, NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL, check_heads_divide_dims,
                   resolve_arch)
from .base_backbone import PyramidBackbone

ATTENTION_IMPLS = ('fast', 'reference')


def check_attn_impl(attn_impl: str) -> str:
    """Return ``attn_impl`` if it names a MaSA implementation, else raise."""
    if attn_impl not in ATTENTION_IMPLS:
        raise ValueError(f'RMT: attn_impl must be one of {ATTENTION_IMPLS} (\'fast\': fused '
                         f'attention with cached tables; \'reference\': the straightforward '
                         f'computation of the spec), got {attn_impl!r}.')
    return attn_impl


class AttnImpl:
    """The ``attn_impl`` a class implements: readable on its instances, not assignable.

    The implementation is the module's class, picked when RMT is built, so
    assigning another name to a built module is an error, not a silent no-op.

    Args:
        name (str): ``'fast'`` or ``'reference'``.
    """

    def __init__(self, name: str) -> None:
        self.name = check_attn_impl(name)

    def __get__(self, instance: Optional[nn.Module], owner: type) -> str:
        return self.name

    def __set__(self, instance: nn.Module, value: object) -> None:
        raise AttributeError(f'RMT: attn_impl is fixed when the model is built ({self.name!r} here); '
                             f'build RMT(..., attn_impl={value!r}) and load this model\'s state dict.')


# --- relative position: rotary q/k and the Manhattan decay ---------------------
def rotate_pairs(x: torch.Tensor) -> torch.Tensor:
    """Map each channel pair (a, b) to (-b, a)."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def apply_rotary(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """Rotate each channel pair of ``x`` by its token's angle."""
    return x * cos + rotate_pairs(x) * sin


class ManhattanRelPos(nn.Module):
    """Rotary tables and Manhattan decay masks of one stage (upstream ``Relpos``).

    Each call computes its table afresh from the buffers ``angle`` (rotary
    frequency per channel) and ``decay`` (log-decay per head), the only
    state, as in the upstream checkpoints.

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


# --- MaSA ----------------------------------------------------------------------
class ManhattanSelfAttention(nn.Module):
    """MaSA with local context enhancement (upstream ``retention``), step by step.

    softmax(q k^T / sqrt(d) + log-decay) v per head, with q and k rotated,
    either along rows then columns (decomposed: the row pass's output is the
    column pass's v) or over all tokens; plus the LCE, a 5x5 depthwise conv
    of v; then the output projection.

    Args:
        embed_dims (int): Channels.
        num_heads (int): Heads; ``embed_dims / num_heads`` must be even.
        decomposed (bool): Attend along rows then columns (linear cost)
            instead of over all tokens.
    """

    attn_impl = AttnImpl('reference')

    def __init__(self, embed_dims: int, num_heads: int, decomposed: bool) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dims = embed_dims // num_heads
        self.scale = self.head_dims ** -0.5
        self.decomposed = decomposed
        self.q_proj = nn.Linear(embed_dims, embed_dims)
        self.k_proj = nn.Linear(embed_dims, embed_dims)
        self.v_proj = nn.Linear(embed_dims, embed_dims)
        self.lepe = ChannelsLastDWConv(embed_dims, 5)
        self.out_proj = nn.Linear(embed_dims, embed_dims)

    def forward(self, x: torch.Tensor, relpos: ManhattanRelPos,
                norm: Optional[nn.LayerNorm] = None) -> torch.Tensor:
        """MaSA of ``norm(x)`` (of ``x`` if ``norm`` is None), channels-last (B, h, w, C)."""
        if norm is not None:
            x = norm(x)
        batch, height, width, channels = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        lepe = self.lepe(v)
        k = k * self.scale
        sin, cos = relpos.rotary(height, width)
        # (B, n, h, w, d)
        q = apply_rotary(q.view(batch, height, width, self.num_heads, -1).permute(0, 3, 1, 2, 4), sin, cos)
        k = apply_rotary(k.view(batch, height, width, self.num_heads, -1).permute(0, 3, 1, 2, 4), sin, cos)
        v = v.view(batch, height, width, self.num_heads, -1).permute(0, 3, 1, 2, 4)
        if self.decomposed:
            out = self._decomposed(q, k, v, relpos.decay_1d(height), relpos.decay_1d(width))
        else:
            out = self._full(q, k, v, relpos.decay_2d(height, width))
        out = out.permute(0, 2, 3, 1, 4).reshape(batch, height, width, channels)
        return self.out_proj(out + lepe)

    @staticmethod
    def _decomposed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    mask_h: torch.Tensor, mask_w: torch.Tensor) -> torch.Tensor:
        # Along each row: (B, h, n, w, d).
        q_w, k_w, v_w = (t.transpose(1, 2) for t in (q, k, v))
        attn_w = torch.softmax(q_w @ k_w.transpose(-1, -2) + mask_w, dim=-1)
        v = (attn_w @ v_w).permute(0, 3, 2, 1, 4)  # (B, w, n, h, d)
        # Along each column with the same rotated q, k: (B, w, n, h, d).
        q_h, k_h = (t.permute(0, 3, 1, 2, 4) for t in (q, k))
        attn_h = torch.softmax(q_h @ k_h.transpose(-1, -2) + mask_h, dim=-1)
        return (attn_h @ v).permute(0, 2, 3, 1, 4)  # (B, n, h, w, d)

    @staticmethod
    def _full(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, heads, height, width, dims = q.shape
        q, k, v = (t.reshape(batch, heads, height * width, dims) for t in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-1, -2) + mask, dim=-1)
        return (attn @ v).view(batch, heads, height, width, dims)


# --- block, stage, backbone ----------------------------------------------------
class RMTBlock(nn.Module):
    """CPE, then pre-norm MaSA and FFN with optional layer scale.

    Args:
        embed_dims (int): Channels.
        num_heads (int): Attention heads.
        mlp_ratio (float): FFN hidden channels / embed_dims.
        decomposed (bool): Decomposed (row/column) or full MaSA.
        drop_path (float): Stochastic depth rate.
        layer_scale (float, optional): Initial layer-scale value, or None
            for no layer scale.
    """

    attn_impl = AttnImpl('reference')
    attention_cls: Type[ManhattanSelfAttention] = ManhattanSelfAttention
    ffn_cls: Type[ConvFFN] = ConvFFN

    def __init__(self, embed_dims: int, num_heads: int, mlp_ratio: float, decomposed: bool,
                 drop_path: float = 0., layer_scale: Optional[float] = None) -> None:
        super().__init__()
        self.pos = ChannelsLastDWConv(embed_dims, 3)
        self.retention_layer_norm = nn.LayerNorm(embed_dims, eps=1e-6)
        self.retention = self.attention_cls(embed_dims, num_heads, decomposed)
        self.final_layer_norm = nn.LayerNorm(embed_dims, eps=1e-6)
        self.ffn = self.ffn_cls(embed_dims, int(mlp_ratio * embed_dims))
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()
        if layer_scale is not None:
            self.gamma_1 = nn.Parameter(torch.full((1, 1, 1, embed_dims), float(layer_scale)))
            self.gamma_2 = nn.Parameter(torch.full((1, 1, 1, embed_dims), float(layer_scale)))
        else:
            self.gamma_1 = self.gamma_2 = None

    def forward(self, x: torch.Tensor, relpos: ManhattanRelPos) -> torch.Tensor:
        """The block on channels-last (B, h, w, C) ``x``."""
        x = self.add_position(x)
        x = self.add_branch(x, self.retention(x, relpos, self.retention_layer_norm), self.gamma_1)
        return self.add_branch(x, self.ffn(x, self.final_layer_norm), self.gamma_2)

    def add_position(self, x: torch.Tensor) -> torch.Tensor:
        """x + CPE(x)."""
        return x + self.pos(x)

    def add_branch(self, x: torch.Tensor, branch: torch.Tensor,
                   gamma: Optional[torch.Tensor]) -> torch.Tensor:
        """x + drop_path(gamma * branch)."""
        return x + self.drop_path(branch if gamma is None else gamma * branch)


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
        self.norm = build_norm_layer(norm_cfg, out_channels)[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.reduction(x.permute(0, 3, 1, 2))).permute(0, 2, 3, 1)



class RMTStage(nn.Module):
    """The blocks of one stage, its positional tables and its downsampling.

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
    """

    relpos_cls: Type[ManhattanRelPos] = ManhattanRelPos
    block_cls: Type[RMTBlock] = RMTBlock

    def __init__(self, embed_dims: int, depth: int, num_heads: int, mlp_ratio: float,
                 init_value: float, heads_range: float, decomposed: bool,
                 drop_paths: Sequence[float], layer_scale: Optional[float],
                 out_channels: Optional[int], norm_cfg: dict) -> None:
        super().__init__()
        self.Relpos = self.relpos_cls(embed_dims, num_heads, init_value, heads_range)
        self.blocks = nn.ModuleList(
            self.block_cls(embed_dims, num_heads, mlp_ratio, decomposed, drop_paths[i], layer_scale)
            for i in range(depth))
        self.downsample = (ConvDownsample(embed_dims, out_channels, norm_cfg)
                           if out_channels is not None else None)


def implementation(attn_impl: str) -> Tuple[Type[nn.Sequential], Type[RMTStage]]:
    """The stem and stage classes of ``attn_impl``.

    ``'reference'``: those of this file. ``'fast'``: their subclasses in
    :mod:`.rmt_fast` (same parameters, same function), imported here because
    they build on this file's classes.
    """
    if check_attn_impl(attn_impl) == 'reference':
        return nn.Sequential, RMTStage
    from .rmt_fast import FastRMTStage, ImageChunkedStem
    return ImageChunkedStem, FastRMTStage


@register_backbone
class RMT(PyramidBackbone):
    """RMT backbone: Manhattan self-attention with a spatial decay prior.

    A PyTorch implementation of `RMT: Retentive Networks Meet Vision
    Transformers <https://arxiv.org/abs/2309.11523>`_ exact to the upstream
    ImageNet checkpoints (keys ``patch_embed``, ``layers``; the output norms
    are ``extra_norms``, as in the upstream detection code).

    Args:
        arch (str | dict): 't'/'tiny', 's'/'small', 'b'/'base', 'l'/'large',
            or a dict with the per-stage lists ``embed_dims``, ``depths``,
            ``num_heads``, ``mlp_ratios``, ``init_values``, ``heads_ranges``,
            ``decomposed`` (bool per stage) and ``layer_scales`` (bool per
            stage), and optionally the scalar ``layer_scale_init`` (1e-6).
        in_channels (int): Input image channels. Defaults to 3.
        out_indices (Sequence[int]): Stages to output. Defaults to (0, 1, 2, 3).
        drop_path_rate (float): Stochastic depth rate, rising linearly over
            the blocks. Defaults to 0.1.
        frozen_stages (int): Stages to freeze (-1: none, 0: the stem).
            Defaults to -1.
        norm_eval (bool): Keep BN in eval mode when training. Defaults to False.
        norm_cfg (dict): Norm of the stem and downsampling convs.
            Defaults to ``dict(type='BN')``.
        with_cp (bool): Activation checkpointing per block. Defaults to False.
        attn_impl (str): ``'fast'`` (the default: the subclasses of
            :mod:`.rmt_fast`: fused attention with cached tables, residuals
            folded into the depthwise kernels, less kept for backward, and in
            CPU inference the stem and blocks on a few images at a time) or
            ``'reference'`` (this file's classes, the spec's computation step
            by step, the oracle of the tests). Both compute the same function
            with the same parameters.
        init_cfg (dict, optional): ``dict(type='Pretrained', checkpoint=...)``
            to load an upstream ImageNet (or detection) checkpoint.
        pretrained (str, optional): Deprecated (mmseg passes its
            ``model.pretrained`` here): see :class:`PyramidBackbone`.
    """

    arch_zoo: Dict[str, dict] = {
        **dict.fromkeys(['t', 'tiny'], dict(
            embed_dims=[64, 128, 256, 512], depths=[2, 2, 8, 2], num_heads=[4, 4, 8, 16],
            mlp_ratios=[3, 3, 3, 3], init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6],
            decomposed=[True, True, False, False], layer_scales=[False, False, False, False])),
        **dict.fromkeys(['s', 'small'], dict(
            embed_dims=[64, 128, 256, 512], depths=[3, 4, 18, 4], num_heads=[4, 4, 8, 16],
            mlp_ratios=[4, 4, 3, 3], init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6],
            decomposed=[True, True, True, False], layer_scales=[False, False, False, False])),
        **dict.fromkeys(['b', 'base'], dict(
            embed_dims=[80, 160, 320, 512], depths=[4, 8, 25, 8], num_heads=[5, 5, 10, 16],
            mlp_ratios=[4, 4, 3, 3], init_values=[2, 2, 2, 2], heads_ranges=[5, 5, 6, 6],
            decomposed=[True, True, True, False], layer_scales=[False, False, True, True])),
        **dict.fromkeys(['l', 'large'], dict(
            embed_dims=[112, 224, 448, 640], depths=[4, 8, 25, 8], num_heads=[7, 7, 14, 20],
            mlp_ratios=[4, 4, 3, 3], init_values=[2, 2, 2, 2], heads_ranges=[6, 6, 6, 6],
            decomposed=[True, True, True, False], layer_scales=[False, False, True, True])),
    }
    #: What a custom arch holds: one value per stage of each key, and optional scalars.
    per_stage_args = dict(embed_dims=POSITIVE_INT, depths=NON_NEGATIVE_INT, num_heads=POSITIVE_INT,
                          mlp_ratios=POSITIVE_REAL, init_values=POSITIVE_REAL,
                          heads_ranges=NON_NEGATIVE_REAL, decomposed=BOOL, layer_scales=BOOL)
    optional_arch_args = dict(layer_scale_init=POSITIVE_REAL)
    #: The classifier of the ImageNet files; ``aux_head`` is the per-token
    #: classifier of the authors' token-labelled checkpoints (RMT-S*/B*/L*).
    dropped_checkpoint_prefixes = ('proj.', 'norm.', 'head.', 'aux_head.')
    new_checkpoint_prefixes = ('extra_norms.', )

    def __init__(self,
                 arch: Union[str, dict] = 't',
                 in_channels: int = 3,
                 out_indices: Sequence[int] = (0, 1, 2, 3),
                 drop_path_rate: float = 0.1,
                 frozen_stages: int = -1,
                 norm_eval: bool = False,
                 norm_cfg: dict = dict(type='BN'),
                 with_cp: bool = False,
                 attn_impl: str = 'fast',
                 init_cfg: Optional[dict] = None,
                 pretrained: Optional[str] = None) -> None:
        stem_cls, stage_cls = implementation(attn_impl)
        settings = resolve_arch(arch, self.arch_zoo, 'RMT', per_stage=self.per_stage_args,
                                optional=self.optional_arch_args)
        dims, depths, heads = settings['embed_dims'], settings['depths'], settings['num_heads']
        super().__init__(in_channels, len(dims), out_indices, frozen_stages, norm_eval, with_cp, init_cfg,
                         drop_path_rate=drop_path_rate, norm_cfg=norm_cfg, pretrained=pretrained)
        check_heads_divide_dims(dims, heads, 'RMT')
        for stage, (channels, num_heads) in enumerate(zip(dims, heads)):
            if (channels // num_heads) % 2:
                raise ValueError(f'RMT: the head dimension embed_dims[{stage}] / num_heads[{stage}] '
                                 f'= {channels // num_heads} is odd; the rotary encoding needs an '
                                 'even head dimension.')
        self.embed_dims = dims

        stem_dims = dims[0] // 2
        norm = lambda channels: build_norm_layer(norm_cfg, channels)[1]  # noqa: E731
        self.patch_embed = nn.Module()
        self.patch_embed.proj = stem_cls(
            nn.Conv2d(in_channels, stem_dims, 3, 2, 1), norm(stem_dims), nn.GELU(),
            nn.Conv2d(stem_dims, stem_dims, 3, 1, 1), norm(stem_dims), nn.GELU(),
            nn.Conv2d(stem_dims, dims[0], 3, 2, 1), norm(dims[0]), nn.GELU(),
            nn.Conv2d(dims[0], dims[0], 3, 1, 1), norm(dims[0]))

        drop_paths = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        layer_scale_init = settings.get('layer_scale_init', 1e-6)
        self.layers = nn.ModuleList()
        for i, depth in enumerate(depths):
            self.layers.append(stage_cls(
                embed_dims=dims[i], depth=depth, num_heads=heads[i],
                mlp_ratio=settings['mlp_ratios'][i], init_value=settings['init_values'][i],
                heads_range=settings['heads_ranges'][i], decomposed=settings['decomposed'][i],
                drop_paths=drop_paths[sum(depths[:i]):sum(depths[:i + 1])],
                layer_scale=layer_scale_init if settings['layer_scales'][i] else None,
                out_channels=dims[i + 1] if i + 1 < len(dims) else None, norm_cfg=norm_cfg))
        self.extra_norms = nn.ModuleDict({str(i): nn.LayerNorm(dims[i]) for i in self.out_indices})
        self._freeze_stages()

    def _frozen_modules(self) -> List[nn.Module]:
        if self.frozen_stages < 0:
            return []
        return [self.patch_embed, *self.layers[:self.frozen_stages], *self.frozen_output_norms()]

    def _init_default_weights(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                trunc_normal_(module.weight, std=.02)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        self.check_input(x)
        x = self.patch_embed.proj(x).permute(0, 2, 3, 1)  # (B, h, w, C)
        outs = []
        for i, stage in enumerate(self.layers):
            for block in stage.blocks:
                x = self.run_block(block, x, stage.Relpos)
            if i in self.out_indices:
                outs.append(self.emit(i, x))
            if stage.downsample is not None:
                x = stage.downsample(x)
        return tuple(outs)
