"""RMT: Retentive Networks Meet Vision Transformers, as a dense-prediction backbone.

Computes exactly what the upstream ImageNet checkpoints expect (see the
project's spec): a four-conv stem; stages of blocks with a positional conv
(CPE), Manhattan self-attention (MaSA) with rotary q/k and an additive
log-decay prior, decomposed along rows and columns or full, its local
context enhancement (LCE), and an FFN with a depthwise conv; conv
downsampling between stages; a LayerNorm on every emitted feature.
Parameter names are the upstream ones, so upstream files load unchanged.
"""
from collections import OrderedDict
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from mmcv.cnn import build_norm_layer
from timm.layers import DropPath, trunc_normal_
from torch import nn

from mmrmt.registry import register_backbone
from ..layers import ChannelsLastDWConv, ConvFFN, norm_then_project
from .arch import check_heads_divide_dims, resolve_arch
from .base_backbone import PyramidBackbone

ATTENTION_IMPLS = ('fast', 'reference')
RotaryTables = Tuple[torch.Tensor, torch.Tensor]


def check_attn_impl(attn_impl: str) -> str:
    """Return ``attn_impl`` if it names a MaSA implementation, else raise."""
    if attn_impl not in ATTENTION_IMPLS:
        raise ValueError(f'RMT: attn_impl must be one of {ATTENTION_IMPLS} (\'fast\': fused '
                         f'attention with cached tables; \'reference\': the straightforward '
                         f'computation of the spec), got {attn_impl!r}.')
    return attn_impl


def rotate_pairs(x: torch.Tensor) -> torch.Tensor:
    """Map each channel pair (a, b) to (-b, a)."""
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


def apply_rotary(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    return x * cos + rotate_pairs(x) * sin


def apply_rotary_signed(x: torch.Tensor, signed_sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """:func:`apply_rotary` with the pair sign folded into ``signed_sin``.

    ``signed_sin`` holds (-sin, sin) on each channel pair, so swapping the
    pair members is all that is left of the rotation; same values bit for bit.
    """
    swapped = x.unflatten(-1, (-1, 2)).flip(-1).flatten(-2)
    return torch.addcmul(x * cos, swapped, signed_sin)


def softmax_(logits: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim, in place.

    Rows shorter than 16 elements are exponentiated and normalised by hand:
    torch's CPU softmax kernel takes ~6x as long on them (14-long rows).
    """
    if logits.shape[-1] >= 16:
        return torch.softmax(logits, dim=-1)
    logits = logits.sub_(logits.amax(dim=-1, keepdim=True)).exp_()
    return logits.div_(logits.sum(dim=-1, keepdim=True))


COMPLEX_DTYPES = {torch.float32: torch.complex64, torch.float64: torch.complex128}

#: Lean CPU inference runs the stem and each block on a few images at a time,
#: so that the largest map of a chunk stays under this many bytes: large fresh
#: tensors cost page faults on every allocation, small ones come back from the
#: heap and stay in cache.
INFERENCE_CHUNK_BYTES = 8 * 2**20


def in_image_chunks(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                    bytes_per_image: int) -> torch.Tensor:
    """``function(x)``, computed on as many images at a time as fit :data:`INFERENCE_CHUNK_BYTES`.

    Only for functions that treat the images of a batch independently.
    """
    step = max(1, INFERENCE_CHUNK_BYTES // bytes_per_image)
    if step >= x.shape[0]:
        return function(x)
    return torch.cat([function(part) for part in x.split(step)])


class FastTables(NamedTuple):
    """What the fast MaSA of one grid needs, in the attention dtype.

    The rotary: for float32/float64, ``rotation`` = cos + i sin per channel
    pair (the rotation is then one complex product); for other dtypes (no
    complex counterpart, e.g. bfloat16) ``cos`` and ``signed_sin``. Decomposed
    stages: rotary tables of (h, w, d or d / 2), to broadcast over heads-major
    (2, B, n, h, w, ...) q and k; ``mask_w`` is (1, n, w, w) and ``mask_h``
    (1, n, h, h). Full stages: rotary tables of (h, w, 1, 1, ...), for
    channels-last (B, h, w, 2, n, ...); ``mask`` is (1, n, hw, hw).
    """
    rotation: Optional[torch.Tensor] = None
    cos: Optional[torch.Tensor] = None
    signed_sin: Optional[torch.Tensor] = None
    mask_h: Optional[torch.Tensor] = None
    mask_w: Optional[torch.Tensor] = None
    mask: Optional[torch.Tensor] = None


def rotate_qk(qk: torch.Tensor, tables: FastTables, heads_major: bool) -> torch.Tensor:
    """The rotary of channels-last (B, h, w, 2, n, d) q and k, in one pass where complex allows.

    Returns a dense (2, B, n, h, w, d) tensor if ``heads_major``, else a dense
    (B, h, w, 2, n, d) one. Same values as :func:`apply_rotary` up to rounding.
    """
    if tables.rotation is None:
        if heads_major:
            qk = qk.permute(3, 0, 4, 1, 2, 5).contiguous()
        return apply_rotary_signed(qk, tables.signed_sin, tables.cos)
    pairs = torch.view_as_complex(qk.unflatten(-1, (-1, 2)))
    if heads_major:
        pairs = pairs.permute(3, 0, 4, 1, 2, 5)
    if torch.is_grad_enabled():
        rotated = pairs.contiguous() * tables.rotation
    else:  # the layout change and the product in one pass
        rotated = torch.mul(pairs, tables.rotation, out=pairs.new_empty(pairs.shape))
    return torch.view_as_real(rotated).flatten(-2)


class ManhattanRelPos(nn.Module):
    """Rotary tables and Manhattan decay masks of one stage (upstream ``Relpos``).

    :meth:`rotary`, :meth:`decay_1d` and :meth:`decay_2d` compute the tables
    afresh (the reference path); :meth:`fast_tables` serves them from a small
    LRU cache keyed on grid, form, dtype and device. The cache is no part of
    the state dict and is dropped whenever ``angle`` or ``decay`` change
    (``load_state_dict``, ``.to()``, in-place edits).

    Args:
        embed_dims (int): Channels of the stage.
        num_heads (int): Heads of the stage.
        init_value (float): Decay exponent of the first head.
        heads_range (float): How much the exponent grows over the heads.
    """

    #: Most grids kept; the newest entry is kept even when over the byte budget.
    cache_entries = 4
    cache_bytes = 256 * 2**20

    def __init__(self, embed_dims: int, num_heads: int, init_value: float, heads_range: float) -> None:
        super().__init__()
        head_dims = embed_dims // num_heads
        angle = 1.0 / (10000 ** torch.linspace(0, 1, head_dims // 2))
        self.register_buffer('angle', angle.repeat_interleave(2))
        heads = torch.arange(num_heads, dtype=torch.float)
        self.register_buffer('decay', torch.log(1 - 2 ** (-init_value - heads_range * heads / num_heads)))
        self._cache: 'OrderedDict[tuple, FastTables]' = OrderedDict()
        self._cache_source: tuple = ()

    def rotary(self, height: int, width: int) -> RotaryTables:
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

    def fast_tables(self, height: int, width: int, decomposed: bool, dtype: torch.dtype) -> FastTables:
        """The tables of a (height, width) grid in ``dtype``, cached."""
        source = (self.angle, self.angle._version, self.decay, self.decay._version)
        if len(self._cache_source) != len(source) or any(
                old is not new if isinstance(new, torch.Tensor) else old != new
                for old, new in zip(self._cache_source, source)):
            self._cache.clear()
            self._cache_source = source
        key = (height, width, decomposed, dtype, self.decay.device)
        tables = self._cache.get(key)
        if tables is None:
            with torch.inference_mode(False), torch.no_grad():
                tables = self._build_fast_tables(height, width, decomposed, dtype)
            self._cache[key] = tables
            self._evict()
        self._cache.move_to_end(key)
        return tables

    def _build_fast_tables(self, height: int, width: int, decomposed: bool,
                           dtype: torch.dtype) -> FastTables:
        sin, cos = self.rotary(height, width)
        shape = (height, width, -1) if decomposed else (height, width, 1, 1, -1)
        if dtype in COMPLEX_DTYPES:
            rotation = torch.complex(cos[..., ::2], sin[..., ::2]).reshape(shape)
            rotary = dict(rotation=rotation.to(COMPLEX_DTYPES[dtype]))
        else:
            sign = torch.tensor([-1.0, 1.0]).to(sin).repeat(sin.shape[-1] // 2)
            rotary = dict(cos=cos.reshape(shape).to(dtype), signed_sin=(sin * sign).reshape(shape).to(dtype))
        if decomposed:
            return FastTables(**rotary, mask_h=self.decay_1d(height)[None].to(dtype),
                              mask_w=self.decay_1d(width)[None].to(dtype))
        return FastTables(**rotary, mask=self.decay_2d(height, width)[None].to(dtype))

    def _evict(self) -> None:
        def size(tables: FastTables) -> int:
            return sum(t.numel() * t.element_size() for t in tables if t is not None)

        total = sum(size(tables) for tables in self._cache.values())
        while len(self._cache) > 1 and (len(self._cache) > self.cache_entries
                                        or total > self.cache_bytes):
            total -= size(self._cache.popitem(last=False)[1])


class ManhattanSelfAttention(nn.Module):
    """MaSA with local context enhancement (upstream ``retention``).

    Args:
        embed_dims (int): Channels.
        num_heads (int): Heads; ``embed_dims / num_heads`` must be even.
        decomposed (bool): Attend along rows then columns (linear cost)
            instead of over all tokens.
        attn_impl (str): ``'fast'``: one fused q/k projection, cached
            tables and ``scaled_dot_product_attention`` with the log-decay as
            its additive mask (it recomputes attention in backward instead of
            storing it). ``'reference'``: the spec's computation, step by step.
            Both compute the same function. Defaults to ``'fast'``.
    """

    #: Longest sequence the fast path attends with explicit GEMMs at inference, and the
    #: most logits bytes it materialises at once (see :meth:`_attend`).
    explicit_max_len = 64
    explicit_logits_bytes = 16 * 2**20

    def __init__(self, embed_dims: int, num_heads: int, decomposed: bool,
                 attn_impl: str = 'fast') -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dims = embed_dims // num_heads
        self.scale = self.head_dims ** -0.5
        self.decomposed = decomposed
        self.attn_impl = check_attn_impl(attn_impl)
        self.q_proj = nn.Linear(embed_dims, embed_dims)
        self.k_proj = nn.Linear(embed_dims, embed_dims)
        self.v_proj = nn.Linear(embed_dims, embed_dims)
        self.lepe = ChannelsLastDWConv(embed_dims, 5)
        self.out_proj = nn.Linear(embed_dims, embed_dims)

    def forward(self, x: torch.Tensor, relpos: ManhattanRelPos,
                norm: Optional[nn.LayerNorm] = None) -> torch.Tensor:
        """MaSA of ``norm(x)`` (of ``x`` if ``norm`` is None), channels-last."""
        if check_attn_impl(self.attn_impl) == 'fast':
            return self._fast_forward(x, relpos, norm)
        return self._reference_forward(x if norm is None else norm(x), relpos)

    # --- fast path ------------------------------------------------------------
    def _fast_forward(self, x: torch.Tensor, relpos: ManhattanRelPos,
                      norm: Optional[nn.LayerNorm]) -> torch.Tensor:
        batch, height, width, channels = x.shape
        # q and k from one projection, so that one op rotates both; v apart,
        # dense channels-last for the LCE conv (a slice of a fused q/k/v
        # projection would cost zero-filled gradients and a strided conv).
        # The norm's output is recomputed in backward, not kept.
        qk_weight = torch.cat((self.q_proj.weight, self.k_proj.weight))
        qk_bias = torch.cat((self.q_proj.bias, self.k_proj.bias))
        qk, v = norm_then_project(x, norm, [(qk_weight, qk_bias), (self.v_proj.weight, self.v_proj.bias)])
        qk = qk.view(batch, height, width, 2, self.num_heads, self.head_dims)
        lepe = self.lepe(v)
        v = v.view(batch, height, width, self.num_heads, self.head_dims)
        tables = relpos.fast_tables(height, width, self.decomposed, qk.dtype)
        if self.decomposed:
            out = self._fast_decomposed(qk, v, tables)
        else:
            out = self._fast_full(qk, v, tables)
        # Summed into the LCE output's own dense tensor (the conv's backward
        # does not need its output): no merged-heads copy, no new tensor.
        merged = lepe.contiguous().view(out.shape).add_(out)
        return self.out_proj(merged.view(batch, height, width, channels))

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        """softmax(scale * q k^T + mask) v over (N, heads, L, d): the k scale folded in.

        With autograd, and for sequences over ``explicit_max_len`` tokens,
        SDPA's fused kernel (its backward recomputes the attention instead of
        keeping it). Without autograd, shorter sequences are attended with
        batched GEMMs and an in-place softmax, a few images at a time so that
        the logits stay under ``explicit_logits_bytes``: at such lengths the
        fused kernel's per-block work costs more than the whole product.
        Traced (FLOP counting, export), it is always the one SDPA op.
        """
        batch, heads, length, _ = q.shape
        if torch.is_grad_enabled() or torch.jit.is_tracing() or length > self.explicit_max_len:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        out = v.new_empty(v.shape)
        step = max(1, self.explicit_logits_bytes // (heads * length * length * q.element_size()))
        for start in range(0, batch, step):
            part = slice(start, start + step)
            logits = torch.matmul(q[part], k[part].transpose(-1, -2))
            torch.matmul(softmax_(logits.mul_(self.scale).add_(mask[part])), v[part], out=out[part])
        return out

    def _fast_decomposed(self, qk: torch.Tensor, v: torch.Tensor, tables: FastTables) -> torch.Tensor:
        """Rows then columns on one heads-major copy; returns (B, h, w, n, d).

        With (B n) as the batch both passes are views: the row pass reads rows
        of (B n, h, w, d) and its output is laid out (B n, w, h, d), the
        columns the second pass needs; the masks only repeat over the batch.
        """
        batch, height, width, _, heads, dims = qk.shape
        q, k = rotate_qk(qk, tables, heads_major=True)  # each (B, n, h, w, d)
        v = v.permute(0, 3, 1, 2, 4).contiguous()
        q, k, v = (t.reshape(batch * heads, height, width, dims) for t in (q, k, v))
        mask_w, mask_h = (mask.expand(batch, -1, -1, -1).reshape(batch * heads, 1, *mask.shape[-2:])
                          for mask in (tables.mask_w, tables.mask_h))
        v = self._attend(q, k, v, mask_w).transpose(1, 2)  # (B n, w, h, d)
        out = self._attend(q.transpose(1, 2), k.transpose(1, 2), v, mask_h)  # (B n, w, h, d)
        return out.transpose(1, 2).reshape(batch, heads, height, width, dims).permute(0, 2, 3, 1, 4)

    def _fast_full(self, qk: torch.Tensor, v: torch.Tensor, tables: FastTables) -> torch.Tensor:
        """Attention over all tokens on channels-last views; returns (B, hw, n, d)."""
        batch, height, width, _, heads, dims = qk.shape
        q, k = rotate_qk(qk, tables, heads_major=False).unbind(3)
        q, k, v = (t.reshape(batch, height * width, heads, dims).transpose(1, 2) for t in (q, k, v))
        return self._attend(q, k, v, tables.mask).transpose(1, 2)

    # --- reference path (the spec, step by step) ----------------------------------
    def _reference_forward(self, x: torch.Tensor, relpos: ManhattanRelPos) -> torch.Tensor:
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
        attn_impl (str): ``'fast'``: the fast MaSA (see
            :class:`ManhattanSelfAttention`), the CPE's and the FFN conv's
            residuals folded into their kernels, the lean FFN of
            :class:`ConvFFN` and, without autograd, residual sums written into
            the branch outputs. ``'reference'``: every step as the spec
            writes it. Defaults to ``'fast'``.
    """

    def __init__(self, embed_dims: int, num_heads: int, mlp_ratio: float, decomposed: bool,
                 drop_path: float = 0., layer_scale: Optional[float] = None,
                 attn_impl: str = 'fast') -> None:
        super().__init__()
        self.lean = check_attn_impl(attn_impl) == 'fast'
        self.pos = ChannelsLastDWConv(embed_dims, 3)
        self.retention_layer_norm = nn.LayerNorm(embed_dims, eps=1e-6)
        self.retention = ManhattanSelfAttention(embed_dims, num_heads, decomposed, attn_impl)
        self.final_layer_norm = nn.LayerNorm(embed_dims, eps=1e-6)
        self.ffn = ConvFFN(embed_dims, int(mlp_ratio * embed_dims), lean=self.lean)
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()
        if layer_scale is not None:
            self.gamma_1 = nn.Parameter(torch.full((1, 1, 1, embed_dims), float(layer_scale)))
            self.gamma_2 = nn.Parameter(torch.full((1, 1, 1, embed_dims), float(layer_scale)))
        else:
            self.gamma_1 = self.gamma_2 = None

    def forward(self, x: torch.Tensor, relpos: ManhattanRelPos) -> torch.Tensor:
        if self.lean and not torch.is_grad_enabled() and x.device.type == 'cpu':
            hidden_bytes = x[0].numel() * self.ffn.fc1.out_features // x.shape[-1] * x.element_size()
            return in_image_chunks(lambda part: self._forward(part, relpos), x, hidden_bytes)
        return self._forward(x, relpos)

    def _forward(self, x: torch.Tensor, relpos: ManhattanRelPos) -> torch.Tensor:
        x = self.pos.forward_residual(x) if self.lean else x + self.pos(x)
        x = self._add_branch(x, self.retention(x, relpos, self.retention_layer_norm), self.gamma_1)
        return self._add_branch(x, self.ffn(x, self.final_layer_norm), self.gamma_2)

    def _add_branch(self, x: torch.Tensor, branch: torch.Tensor,
                    gamma: Optional[torch.Tensor]) -> torch.Tensor:
        """x + drop_path(gamma * branch); lean without autograd: summed into the branch's tensor."""
        branch = self.drop_path(branch if gamma is None else gamma * branch)
        if self.lean and not torch.is_grad_enabled() and branch.dtype == x.dtype:
            return branch.add_(x)
        return x + branch


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
        attn_impl (str): MaSA implementation, ``'fast'`` or ``'reference'``.
            Defaults to ``'fast'``.
    """

    def __init__(self, embed_dims: int, depth: int, num_heads: int, mlp_ratio: float,
                 init_value: float, heads_range: float, decomposed: bool,
                 drop_paths: Sequence[float], layer_scale: Optional[float],
                 out_channels: Optional[int], norm_cfg: dict, attn_impl: str = 'fast') -> None:
        super().__init__()
        self.Relpos = ManhattanRelPos(embed_dims, num_heads, init_value, heads_range)
        self.blocks = nn.ModuleList(
            RMTBlock(embed_dims, num_heads, mlp_ratio, decomposed, drop_paths[i], layer_scale, attn_impl)
            for i in range(depth))
        self.downsample = (ConvDownsample(embed_dims, out_channels, norm_cfg)
                           if out_channels is not None else None)


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
        attn_impl (str): ``'fast'`` (the default: fused attention with
            cached tables, the lean block of :class:`RMTBlock`, and in CPU
            inference in eval mode the stem and blocks run a few images at a
            time) or ``'reference'`` (the spec's computation step by step, the
            oracle of the tests). Both compute the same function.
        init_cfg (dict, optional): ``dict(type='Pretrained', checkpoint=...)``
            to load an upstream ImageNet (or detection) checkpoint.
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
    per_stage_keys = ('embed_dims', 'depths', 'num_heads', 'mlp_ratios', 'init_values',
                      'heads_ranges', 'decomposed', 'layer_scales')
    dropped_checkpoint_prefixes = ('proj.', 'norm.', 'head.')
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
                 init_cfg: Optional[dict] = None) -> None:
        check_attn_impl(attn_impl)
        settings = resolve_arch(arch, self.arch_zoo, self.per_stage_keys, 'RMT')
        dims, depths, heads = settings['embed_dims'], settings['depths'], settings['num_heads']
        super().__init__(in_channels, len(dims), out_indices, frozen_stages, norm_eval, with_cp, init_cfg)
        self.lean = attn_impl == 'fast'
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
        self.patch_embed.proj = nn.Sequential(
            nn.Conv2d(in_channels, stem_dims, 3, 2, 1), norm(stem_dims), nn.GELU(),
            nn.Conv2d(stem_dims, stem_dims, 3, 1, 1), norm(stem_dims), nn.GELU(),
            nn.Conv2d(stem_dims, dims[0], 3, 2, 1), norm(dims[0]), nn.GELU(),
            nn.Conv2d(dims[0], dims[0], 3, 1, 1), norm(dims[0]))

        drop_paths = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        layer_scale_init = settings.get('layer_scale_init', 1e-6)
        self.layers = nn.ModuleList()
        for i, depth in enumerate(depths):
            self.layers.append(RMTStage(
                embed_dims=dims[i], depth=depth, num_heads=heads[i],
                mlp_ratio=settings['mlp_ratios'][i], init_value=settings['init_values'][i],
                heads_range=settings['heads_ranges'][i], decomposed=settings['decomposed'][i],
                drop_paths=drop_paths[sum(depths[:i]):sum(depths[:i + 1])],
                layer_scale=layer_scale_init if settings['layer_scales'][i] else None,
                out_channels=dims[i + 1] if i + 1 < len(dims) else None, norm_cfg=norm_cfg,
                attn_impl=attn_impl))
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
        stem = self.patch_embed.proj
        if self.lean and not self.training and not torch.is_grad_enabled() and x.device.type == 'cpu':
            first_map_bytes = stem[0].out_channels * -(-x.shape[2] // 2) * -(-x.shape[3] // 2) * x.element_size()
            x = in_image_chunks(stem, x, first_map_bytes)  # eval: BatchNorm is per image
        else:
            x = stem(x)
        x = x.permute(0, 2, 3, 1)  # (B, h, w, C)
        outs = []
        for i, stage in enumerate(self.layers):
            for block in stage.blocks:
                x = self.run_block(block, x, stage.Relpos)
            if i in self.out_indices:
                outs.append(self.emit(i, x))
            if stage.downsample is not None:
                x = stage.downsample(x)
        return tuple(outs)
