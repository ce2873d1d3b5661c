"""ResT (v1): an efficient multi-scale vision Transformer, as a dense-prediction backbone.

Computes what the upstream ImageNet checkpoints expect (see the project's
spec): a three-conv stem ending in a positional gate (PA); overlapping
stride-2 patch embeddings with a norm and PA before stages 2-4; pre-norm
blocks whose attention (EMSA) takes keys and values from a grid shrunk by a
strided depthwise conv and mixes the heads' scores with a 1x1 conv and an
instance norm. Beyond the upstream code it accepts any input size (a stage's
grid is the conv's output, never H // 2) and puts a LayerNorm on every
emitted feature without feeding it forward (the last stage's is the
checkpoint's final ``norm``). Parameter names are the upstream ones.
"""
import re
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from timm.layers import DropPath, Mlp, trunc_normal_
from torch import nn

from mmrmt.checkpoint import StateDict, extract_state_dict
from ..layers import build_norm_layer, in_image_chunks, norm_then_project, run_mode
from ..layers.fused_attention import scaled_dot_product_attention
from ..layers.plain_attention import plain_attention
from .arch import (DROP_RATE, INT, NON_NEGATIVE_INT, POSITIVE_INT, POSITIVE_REAL, ArgKind, UpstreamFiles, check_arg,
                   check_heads_divide_dims, resolve_arch)
from .base_backbone import PyramidBackbone, call_block, takes_backbone_options
from .implementation import BackboneImplementation
from .rest_attention import EPS, mixed_head_attention
from .rest_mlp import gelu_projection


class PixelAttention(nn.Module):
    """Positional gate: ``x * sigmoid(depthwise_conv3x3(x))`` (upstream ``PA``).

    Args:
        channels (int): Channels of the (B, C, H, W) map.
    """

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.pa_conv = nn.Conv2d(channels, channels, 3, 1, 1, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.pa_conv(x))


class ConvStem(nn.Module):
    """Three 3x3 convs (strides 2, 1, 2, no bias), norm + ReLU after the first two, then PA.

    Args:
        in_channels (int): Image channels.
        out_channels (int): Channels of stage 1; the hidden convs have half.
        norm_cfg (dict): Norm after the first two convs.
    """

    def __init__(self, in_channels: int, out_channels: int, norm_cfg: dict) -> None:
        super().__init__()
        hidden = out_channels // 2
        self.conv1 = nn.Conv2d(in_channels, hidden, 3, 2, 1, bias=False)
        self.norm1 = build_norm_layer(norm_cfg, hidden)
        self.conv2 = nn.Conv2d(hidden, hidden, 3, 1, 1, bias=False)
        self.norm2 = build_norm_layer(norm_cfg, hidden)
        self.conv3 = nn.Conv2d(hidden, out_channels, 3, 2, 1, bias=False)
        self.pos = PixelAttention(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.norm1(self.conv1(x)))
        x = F.relu(self.norm2(self.conv2(x)))
        return self.pos(self.conv3(x))


class ConvPatchEmbed(nn.Module):
    """Overlapping 3x3 stride-2 conv, norm, PA: halves the grid (rounding up).

    Args:
        in_channels (int): Channels of the previous stage.
        out_channels (int): Channels of this stage.
        norm_cfg (dict): Norm after the conv.
    """

    def __init__(self, in_channels: int, out_channels: int, norm_cfg: dict) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.norm = build_norm_layer(norm_cfg, out_channels)
        self.pos = PixelAttention(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pos(self.norm(self.conv(x)))


def expm1_by_tanh(x: torch.Tensor) -> torch.Tensor:
    """``exp(x) - 1`` as ``2 tanh(x / 2) / (1 - tanh(x / 2))``, for ``x <= 0``: ONNX has no expm1, and
    this is as precise relative to the result (the denominator stays in [1, 2)), where ``exp(x) - 1``
    would cancel for small ``x``."""
    half = torch.tanh(x / 2)
    return 2 * half / (1 - half)


def softmax_deviations(scores: torch.Tensor, expm1: Callable[[torch.Tensor], torch.Tensor] = torch.expm1
                       ) -> torch.Tensor:
    """Each softmax probability of (..., N') ``scores`` minus its row's mean ``1 / N'``, computed to float
    precision (float32 at least) from the scores, row by row, with ``expm1`` (``exp(x) - 1`` accurate
    for ``x <= 0``).

    Every softmax row sums to one, so a row's mean is exactly ``1 / N'``;
    with ``u = exp(s - max) - 1`` per element (accurately, ``expm1``),
    ``p - 1 / N' = (u - mean(u)) / (N' (1 + mean(u)))`` over each row. On
    near-uniform attention (at initialisation, and in some heads of any
    model) the deviations are tiny next to ``1 / N'``, and subtracting a mean
    from rounded probabilities loses most of their digits, the more the
    longer the mean's rounding (the figures: docs/deployment.md, "ResT: why
    it differed by 1e-3").

    Half-precision scores (under autocast) are computed in float32, as
    autocast runs softmax and norms: in float16 the squared deviations
    underflow and the gradient of ``rsqrt(... + eps)`` overflows to inf.
    """
    scores = scores.to(torch.promote_types(scores.dtype, torch.float32))
    shifted = expm1(scores - scores.amax(dim=-1, keepdim=True))
    row_mean = shifted.mean(dim=-1, keepdim=True)
    return (shifted - row_mean) / ((1 + row_mean) * scores.shape[-1])


def mixed_head_plain_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, transform_conv: nn.Conv2d,
                               scale: float, runs: Optional[Tuple[int, int]] = None,
                               expm1: Callable[[torch.Tensor], torch.Tensor] = torch.expm1) -> torch.Tensor:
    """ResT's multi-head core in plain ops (countable, and exportable), for (B, n, N, d) ``q`` and
    (B, n, N', d) ``k`` and ``v``; (B, n, N, d).

    Computes ``InstanceNorm2d(n)(softmax(transform_conv(scale q k^T))) v``
    (no affine, no running statistics) as :mod:`.rest_attention` does: every
    softmax row sums to one, so each (sample, head) map's mean is exactly
    ``1 / N'`` and its instance norm is :func:`softmax_deviations` times one
    scalar per map, which scales the (N, d) output instead of the (N, N')
    map; everything else is row-local. A single-element map gives 0 instead
    of an error, so that inputs whose last grid is 1x1 work. ``runs``
    ``(dim, length)``: computed ``length`` images at a time (``dim`` -4) or
    ``length`` queries at a time (``dim`` -2; the heads are mixed, never
    split); by default in one pass. ``expm1`` is that of
    :func:`softmax_deviations`.
    """
    dim, length = (-2, None) if runs is None else runs
    if dim == -2:
        return _mixed_head_query_runs(q, k, v, transform_conv, scale, length, expm1)
    return torch.cat([_mixed_head_query_runs(*(t[start:start + length] for t in (q, k, v)), transform_conv, scale,
                                             None, expm1) for start in range(0, len(q), length)])


def _mixed_head_query_runs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, transform_conv: nn.Conv2d,
                           scale: float, length: Optional[int],
                           expm1: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """:func:`mixed_head_plain_attention` with its queries ``length`` at a time; None: in one pass, which
    reads no size as a Python int (``range`` over a sequence length would fix it in a ``torch.export``)."""
    queries, keys = q.shape[-2], k.shape[-2]
    keys_t = k.transpose(-1, -2)
    outputs, square_sums = [], []
    for rows in [q] if length is None else (q[..., start:start + length, :] for start in range(0, queries, length)):
        centred = softmax_deviations(transform_conv(torch.matmul(rows, keys_t) * scale), expm1)
        square_sums.append(centred.square().sum(dim=(-2, -1), keepdim=True))
        outputs.append(torch.matmul(centred.to(v.dtype), v))
    out = torch.cat(outputs, dim=-2) if len(outputs) > 1 else outputs[0]
    norm = torch.rsqrt(sum(square_sums[1:], square_sums[0]) / (queries * keys) + EPS)
    return out * norm.to(out.dtype)


class EfficientMultiHeadAttention(nn.Module):
    """EMSA: queries from all tokens, keys/values from a depthwise-conv-shrunk grid, as the spec computes it.

    With more than one head the scaled scores are mixed across heads by a
    1x1 conv (``transform_conv``) before the softmax and instance-normalised
    per head after it; a single head skips both, as upstream. The score maps
    are materialised, every step written out (the reference of
    :class:`FastEfficientMultiHeadAttention`).

    Args:
        embed_dims (int): Channels.
        num_heads (int): Heads; must divide ``embed_dims``.
        sr_ratio (int): Grid reduction of keys/values: a depthwise conv with
            kernel ``sr_ratio + 1``, stride ``sr_ratio`` and padding
            ``sr_ratio // 2`` followed by a LayerNorm; 1 for none.
    """

    def __init__(self, embed_dims: int, num_heads: int, sr_ratio: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.scale = (embed_dims // num_heads) ** -0.5
        self.q = nn.Linear(embed_dims, embed_dims)
        self.kv = nn.Linear(embed_dims, 2 * embed_dims)
        self.proj = nn.Linear(embed_dims, embed_dims)
        self.sr_ratio = sr_ratio
        if sr_ratio > 1:
            self.sr = nn.Conv2d(embed_dims, embed_dims, sr_ratio + 1, sr_ratio, sr_ratio // 2,
                                groups=embed_dims)
            self.sr_norm = nn.LayerNorm(embed_dims)
        if num_heads > 1:
            self.transform_conv = nn.Conv2d(num_heads, num_heads, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """EMSA of channels-last (B, h, w, C) ``x``."""
        batch, height, width, channels = x.shape
        q = self.q(x).view(batch, height * width, self.num_heads, -1)
        if self.sr_ratio > 1:  # the conv reads and writes channels-last memory
            x = self.sr_norm(self.reduce(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1).reshape(batch, -1, channels))
        k, v = self.kv(x).view(batch, -1, 2, self.num_heads, q.shape[-1]).unbind(2)  # each (B, N', n, d)
        return self.proj(self.attend(q, k, v).reshape(batch, height, width, channels))

    def reduce(self, x: torch.Tensor) -> torch.Tensor:
        """The keys' and values' (B, C, h', w') grid of (B, C, h, w) ``x``: the ``sr`` conv."""
        return self.sr(x)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The heads' attention of (B, N, n, d) ``q`` over (B, N', n, d) ``k`` and ``v``; (B, N, n, d)."""
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        if self.num_heads > 1:
            weights = F.instance_norm(self.transform_conv(scores).softmax(dim=-1), eps=EPS)
        else:
            weights = scores.softmax(dim=-1)
        return torch.matmul(weights, v).transpose(1, 2)


class FastEfficientMultiHeadAttention(EfficientMultiHeadAttention):
    """:class:`EfficientMultiHeadAttention` through fused attention: one head with SDPA, mixed heads with
    the lean core of :func:`.rest_attention.mixed_head_attention` (no score map kept for backward); with
    autograd under CPU half-precision autocast, the ``sr`` conv in float32; while a graph is recorded, its
    graph form (:meth:`graph_attend`). Same arguments and parameters."""

    def reduce(self, x: torch.Tensor) -> torch.Tensor:
        """The ``sr`` conv; in float32 with autograd under CPU half-precision autocast, where torch's
        strided depthwise-conv backward in half precision is an order of magnitude the slower
        (docs/benchmark.md)."""
        if x.device.type != 'cpu' or run_mode.autocast_dtype(x) is None or not run_mode.keeps_autograd():
            return self.sr(x)
        with torch.autocast('cpu', enabled=False):
            return self.sr(x.float())

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The heads' attention of (B, N, n, d) ``q`` over (B, N', n, d) ``k`` and ``v``; (B, N, n, d)."""
        if run_mode.records_graph():
            return self.graph_attend(q, k, v)
        if self.num_heads == 1:
            return scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                                                ).transpose(1, 2)
        return mixed_head_attention(q, k, v, self.transform_conv.weight, self.transform_conv.bias, self.scale)

    def graph_attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """What :meth:`attend` computes, in the plain ops every exporter and tracer records (the graph form:
        no autograd Function, in-place write or expm1, which ONNX lacks): one head as
        :func:`...layers.plain_attention.plain_attention`, mixed heads as :func:`mixed_head_plain_attention`
        with :func:`expm1_by_tanh`, each in the runs of :meth:`graph_runs`."""
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if self.num_heads == 1:
            return plain_attention(q, k, v, runs=self.graph_runs(q, k)).transpose(1, 2)
        return mixed_head_plain_attention(q, k, v, self.transform_conv, self.scale, self.graph_runs(q, k, leading=1),
                                          expm1_by_tanh).transpose(1, 2)

    def graph_runs(self, q: torch.Tensor, k: torch.Tensor, leading: Optional[int] = None
                   ) -> Optional[Tuple[int, int]]:
        """The runs a recorded graph attends (B, n, N, d) ``q`` over ``k`` in, splitting at most the first
        ``leading`` leading dims (all by default; see :func:`mixed_head_plain_attention`): None, one pass.
        (The deployment side's graphs of fixed shapes split it.)"""
        return None


class ResTBlock(nn.Module):
    """Pre-norm EMSA and MLP with residuals, on channels-last (B, h, w, C) maps, as the spec writes them.

    Args:
        embed_dims (int): Channels.
        num_heads (int): Attention heads.
        mlp_ratio (float): MLP hidden channels / embed_dims.
        sr_ratio (int): Key/value grid reduction of the attention.
        drop_path (float): Stochastic depth rate.
        implementation (BackboneImplementation): Whose ``attention`` class (EMSA) the block builds.
    """

    def __init__(self, embed_dims: int, num_heads: int, mlp_ratio: float, sr_ratio: int,
                 drop_path: float = 0., *, implementation: BackboneImplementation) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(embed_dims)
        self.attn = implementation.attention(embed_dims, num_heads, sr_ratio)
        self.norm2 = nn.LayerNorm(embed_dims)
        self.mlp = Mlp(embed_dims, int(embed_dims * mlp_ratio))
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block on channels-last (B, h, w, C) ``x``."""
        x = x + self.drop_path(self.attn(self.norm1(x)))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class FastResTBlock(ResTBlock):
    """:class:`ResTBlock` computed leanly: same arguments and parameters, less kept for backward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block on channels-last (B, h, w, C) ``x``.

        The MLP keeps only its fc1 input (not the norm's output) and fc1 output
        for backward (see :func:`.rest_mlp.gelu_projection`); without
        autograd the residual sums are written into the branch outputs.
        """
        grad = run_mode.keeps_autograd()
        branch = self.drop_path(self.attn(self.norm1(x)))
        x = x + branch if grad else branch.add_(x)
        hidden, = norm_then_project(x, self.norm2, [(self.mlp.fc1.weight, self.mlp.fc1.bias)])
        branch = self.drop_path(gelu_projection(hidden, self.mlp.fc2.weight, self.mlp.fc2.bias))
        return x + branch if grad else branch.add_(x)


#: The two implementations, by ``impl``: ``'fast'`` (the lean blocks and attention) and ``'reference'``
#: (the spec's computation step by step, the oracle of the tests); the same parameters.
IMPLEMENTATIONS: Dict[str, BackboneImplementation] = {
    'fast': BackboneImplementation(block=FastResTBlock, attention=FastEfficientMultiHeadAttention),
    'reference': BackboneImplementation(block=ResTBlock, attention=EfficientMultiHeadAttention),
}
IMPL = ArgKind((str, ), lambda impl: impl in IMPLEMENTATIONS,
               "'fast' (lean attention and MLP) or 'reference' (the spec's computation step by step)")
DETECTRON2_BACKBONE_PREFIX = 'backbone.bottom_up.'


def rest_detectron2_to_mmrmt(state_dict: StateDict) -> StateDict:
    """A ResT detectron2 detector (the authors' COCO models) to the ResT backbone: ``backbone.bottom_up.normN``
    become ``extra_norms.N-1``, FPN and heads are left out; a ``ValueError`` without such keys."""
    if not any(key.startswith(DETECTRON2_BACKBONE_PREFIX) for key in state_dict):
        raise ValueError('not a ResT detectron2 checkpoint: no keys start with '
                         f'{DETECTRON2_BACKBONE_PREFIX!r}')
    renamed = {}
    for key, value in extract_state_dict(state_dict, prefix=DETECTRON2_BACKBONE_PREFIX).items():
        match = re.match(r'norm([123])\.(.*)', key)
        renamed[f'extra_norms.{int(match.group(1)) - 1}.{match.group(2)}' if match else key] = value
    return renamed


class ResT(PyramidBackbone):
    """ResT backbone: efficient multi-head self-attention with a conv stem.

    A PyTorch implementation of `ResT: An Efficient Transformer for Visual
    Recognition <https://arxiv.org/abs/2105.13677>`_ exact to the upstream
    ImageNet checkpoints (keys ``stem``, ``patch_embed_{2,3,4}``,
    ``stage{1..4}``, ``norm``). Stage ``i`` emits ``extra_norms.{i}(x)``;
    the last stage's output norm is ``norm``.

    Args:
        arch (str | dict): 'lite', 'small', 'base', 'large' (any case), or a
            dict with the per-stage lists ``embed_dims``, ``depths``,
            ``num_heads``, ``mlp_ratios`` and ``sr_ratios`` (key/value grid
            reductions), and optionally the scalar ``drop_path_rate``.
        out_indices (Sequence[int]): Stages to output. Defaults to (0, 1, 2, 3).
        drop_path_rate (float, optional): Stochastic depth rate, rising
            linearly over the blocks. Defaults to None: the variant's
            detection setting (0.1 for lite/small, 0.2 for base/large, a
            custom arch's ``drop_path_rate`` or else 0.1).
        impl (str): ``'fast'`` (the default: SDPA and the lean mixed-head
            core, the pre-norm fused into the MLP, less kept for backward)
            or ``'reference'`` (the spec's computation step by step, the
            oracle of the tests): the same function with the same parameters
            (:data:`IMPLEMENTATIONS`).
        **options: The keyword-only options of every backbone, typed,
            defaulted and documented by :class:`PyramidBackbone`:
            ``in_channels``, ``frozen_stages`` (here -1: none, 0: the stem,
            k: the stem and stages 1..k, each with its patch embedding and
            output norm), ``norm_eval``, ``norm_cfg`` (here the norm of the
            stem and patch-embedding convs), ``with_cp`` (per block),
            ``init_cfg`` (an upstream ImageNet checkpoint) and the deprecated
            ``pretrained``.
    """

    arch_zoo: Dict[str, dict] = {
        'lite': dict(embed_dims=[64, 128, 256, 512], depths=[2, 2, 2, 2], num_heads=[1, 2, 4, 8],
                     mlp_ratios=[4, 4, 4, 4], sr_ratios=[8, 4, 2, 1], drop_path_rate=0.1),
        'small': dict(embed_dims=[64, 128, 256, 512], depths=[2, 2, 6, 2], num_heads=[1, 2, 4, 8],
                      mlp_ratios=[4, 4, 4, 4], sr_ratios=[8, 4, 2, 1], drop_path_rate=0.1),
        'base': dict(embed_dims=[96, 192, 384, 768], depths=[2, 2, 6, 2], num_heads=[1, 2, 4, 8],
                     mlp_ratios=[4, 4, 4, 4], sr_ratios=[8, 4, 2, 1], drop_path_rate=0.2),
        'large': dict(embed_dims=[96, 192, 384, 768], depths=[2, 2, 18, 2], num_heads=[1, 2, 4, 8],
                      mlp_ratios=[4, 4, 4, 4], sr_ratios=[8, 4, 2, 1], drop_path_rate=0.2),
    }
    #: What a custom arch holds: one value per stage of each key, and optional scalars.
    per_stage_args = dict(embed_dims=POSITIVE_INT, depths=NON_NEGATIVE_INT, num_heads=POSITIVE_INT,
                          mlp_ratios=POSITIVE_REAL, sr_ratios=POSITIVE_INT)
    optional_arch_args = dict(drop_path_rate=DROP_RATE)
    dropped_checkpoint_prefixes = ('head.', )
    new_checkpoint_prefixes = ('extra_norms.', )
    #: What tools/model_converters/rest_detectron2_to_mmrmt.py converts, and how it names the variant.
    upstream_files = UpstreamFiles(rest_detectron2_to_mmrmt, r'stage(\d+)\.(\d+)\.', 'stage{}.0.norm1.weight')

    @takes_backbone_options
    def __init__(self,
                 arch: Union[str, dict] = 'small',
                 out_indices: Sequence[int] = (0, 1, 2, 3),
                 drop_path_rate: Optional[float] = None,
                 impl: str = 'fast',
                 **options: Any) -> None:
        check_arg('ResT', 'impl', impl, IMPL)
        settings = resolve_arch(arch, self.arch_zoo, 'ResT', per_stage=self.per_stage_args,
                                optional=self.optional_arch_args)
        dims, depths, heads = settings['embed_dims'], settings['depths'], settings['num_heads']
        if drop_path_rate is None:
            drop_path_rate = settings.get('drop_path_rate', 0.1)
        super().__init__(len(dims), out_indices, drop_path_rate, **options)
        check_heads_divide_dims(dims, heads, 'ResT')
        check_arg('ResT', "arch['embed_dims'][0]", dims[0],
                  ArgKind(INT, lambda channels: channels >= 2, "an int >= 2 (the stem's hidden convs have half)"))
        self.embed_dims = dims
        classes = IMPLEMENTATIONS[impl]

        self.stem = ConvStem(self.in_channels, dims[0], self.norm_cfg)
        for i in range(1, self.num_stages):
            self.add_module(f'patch_embed_{i + 1}', ConvPatchEmbed(dims[i - 1], dims[i], self.norm_cfg))
        drop_paths = torch.linspace(0, drop_path_rate, sum(depths), device='cpu').tolist()
        for i, depth in enumerate(depths):
            first = sum(depths[:i])
            self.add_module(f'stage{i + 1}', nn.ModuleList(
                classes.block(dims[i], heads[i], settings['mlp_ratios'][i], settings['sr_ratios'][i],
                              drop_paths[first + j], implementation=classes) for j in range(depth)))
        self.norm = nn.LayerNorm(dims[-1])
        self.extra_norms = nn.ModuleDict({str(i): nn.LayerNorm(dims[i])
                                          for i in self.out_indices if i < self.num_stages - 1})
        self._freeze_stages()

    def patch_embed(self, stage: int) -> nn.Module:
        """What turns the previous map (the image for stage 0) into ``stage``'s grid."""
        return self.stem if stage == 0 else getattr(self, f'patch_embed_{stage + 1}')

    def stage(self, stage: int) -> nn.ModuleList:
        """The blocks of ``stage`` (0-based)."""
        return getattr(self, f'stage{stage + 1}')

    def output_norm(self, stage: int) -> nn.Module:
        return self.norm if stage == self.num_stages - 1 else self.extra_norms[str(stage)]

    def _frozen_modules(self) -> List[nn.Module]:
        if self.frozen_stages < 0:
            return []
        # A stage is its patch embedding (the stem for stage 0) and its blocks.
        return ([self.patch_embed(i) for i in range(max(self.frozen_stages, 1))]
                + [self.stage(i) for i in range(self.frozen_stages)] + self.frozen_output_norms())

    def _init_default_weights(self) -> None:
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                trunc_normal_(module.weight, std=.02)
                if isinstance(module, nn.Linear):
                    nn.init.zeros_(module.bias)
            elif isinstance(module, (nn.LayerNorm, nn.modules.batchnorm._BatchNorm)):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        """The emitted stages of (B, C, H, W) images, each (B, C_i, h_i, w_i).

        CPU inference in eval mode (BatchNorm on running statistics, so every
        image on its own) runs each stage on a few images at a time
        (:func:`.image_chunks.in_image_chunks`, by the stage's MLP hidden
        map): a whole batch's maps stream through main memory, a chunk's stay
        in cache. Later stages have smaller maps and larger weights, so they
        take more images per chunk and their linear layers reuse each weight
        over more rows.

        There the convolutions also read and write channels-last memory
        (faster kernels; in training their backward is slower), in which the
        blocks' (B, h, w, C) layout is a free permute.
        """
        self.check_input(x)
        return tuple(self.stage_maps(x, self.out_indices[-1],
                                     lambda i, out: self.emit(i, out) if i in self.out_indices else None))

    def stage_maps(self, x: torch.Tensor, last: int,
                   emit: Callable[[int, torch.Tensor], Optional[torch.Tensor]]) -> List[torch.Tensor]:
        """``emit(i, output)`` of stages ``i`` = 0..``last`` of (B, C, H, W) images, where not None;
        ``output`` is the (B, h, w, C) map before any output norm."""
        conv_layout = (torch.channels_last if run_mode.chunks_cpu_inference(x, self.training)
                       else torch.contiguous_format)
        x = x.contiguous(memory_format=conv_layout)
        outs = []
        for i in range(last + 1):
            x = in_image_chunks(partial(self.stage_forward, i), x, self._hidden_bytes(i, x), self.training)
            out = emit(i, x)
            if out is not None:
                outs.append(out)
            x = x.permute(0, 3, 1, 2).contiguous(memory_format=conv_layout)
        return outs

    def stage_forward(self, stage: int, x: torch.Tensor) -> torch.Tensor:
        """Patch embedding and blocks of ``stage`` on the previous (B, C, H, W) map; (B, h, w, C) out."""
        x = self.patch_embed(stage)(x).permute(0, 2, 3, 1)
        for block in self.stage(stage):
            x = call_block(block, x, with_cp=self.with_cp)
        return x

    def _hidden_bytes(self, stage: int, x: torch.Tensor) -> int:
        """The bytes of one image's MLP hidden map in ``stage`` (of input ``x``)."""
        blocks = self.stage(stage)
        channels = blocks[0].mlp.fc1.out_features if len(blocks) else self.embed_dims[stage]
        stride = 4 if stage == 0 else 2
        return channels * -(-x.shape[2] // stride) * -(-x.shape[3] // stride) * x.element_size()
