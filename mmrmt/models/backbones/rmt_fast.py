"""RMT's fast path (``attn_impl='fast'``): the same function as :mod:`.rmt`, faster.

Subclasses of the reference classes with the same parameters (so the same
state dict), which :func:`.rmt.implementation` picks when RMT is built:

- :class:`FastManhattanRelPos`: the rotary tables and decay masks in the
  layout the fast MaSA reads, cached per grid;
- :class:`FastManhattanSelfAttention`: q and k from one projection, one
  complex product for the rotary, fused attention (SDPA) with the log-decay
  as its additive mask, and batched GEMMs for short sequences at inference;
- :class:`FastRMTBlock`: residuals folded into the depthwise kernels, the
  norms' and the FFN's hidden outputs recomputed in backward, and without
  autograd in-place sums and CPU inference a few images at a time;
- :class:`ImageChunkedStem`: the stem a few images at a time in CPU eval
  inference.

docs/benchmark.md lists what each step saves. While exported (either of
``torch.onnx.export``'s exporters, ``torch.export``; see
:func:`..layers.is_exporting`) the path takes its export form, written here
once: the rotary as real multiply-adds (ONNX has no complex numbers), the
tables computed in the graph from its grid sizes instead of read from the
cache (a dynamic graph serves any input size; a fixed-size export folds them
into constants), SDPA for every attention, and no image chunks (one graph
for any batch). docs/deployment.md has the measured differences.
"""
from collections import OrderedDict
from typing import Callable, NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..layers import FastConvFFN, is_exporting, norm_then_project
from .rmt import AttnImpl, ManhattanRelPos, ManhattanSelfAttention, RMTBlock, RMTStage

COMPLEX_DTYPES = {torch.float32: torch.complex64, torch.float64: torch.complex128}

#: CPU inference runs the stem and each block on a few images at a time, so
#: that the largest map of a chunk stays under this many bytes: large fresh
#: tensors cost page faults on every allocation, small ones come back from the
#: heap and stay in cache.
INFERENCE_CHUNK_BYTES = 8 * 2**20


def in_image_chunks(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                    bytes_per_image: int) -> torch.Tensor:
    """``function(x)``, computed on as many images at a time as fit :data:`INFERENCE_CHUNK_BYTES`.

    Only for functions that treat the images of a batch independently.
    Exported, the whole batch at once.
    """
    if is_exporting():
        return function(x)
    step = max(1, INFERENCE_CHUNK_BYTES // bytes_per_image)
    if step >= x.shape[0]:
        return function(x)
    return torch.cat([function(part) for part in x.split(step)])


def apply_rotary_signed(x: torch.Tensor, signed_sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """:func:`.rmt.apply_rotary` with the pair sign folded into ``signed_sin``.

    ``signed_sin`` holds (-sin, sin) on each channel pair, so swapping the
    pair members is all that is left of the rotation; same values bit for bit.
    """
    return torch.addcmul(x * cos, swap_pairs(x), signed_sin)


def swap_pairs(x: torch.Tensor) -> torch.Tensor:
    """``x`` with the members of each channel pair swapped: (x1, x0, x3, x2, ...), exactly.

    Exported, a product with the constant pair-swap permutation: onnxruntime
    runs the step -1 Slice that ``flip`` becomes about 9x slower than this
    small MatMul (8.6 % of the RMT-T backbone graph's time before).
    """
    if is_exporting():
        channels = x.shape[-1]
        permutation = torch.eye(channels, dtype=x.dtype, device=x.device)[[i ^ 1 for i in range(channels)]]
        return torch.matmul(x, permutation)
    return x.unflatten(-1, (-1, 2)).flip(-1).flatten(-2)


def softmax_(logits: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim, in place.

    Rows shorter than 16 elements are exponentiated and normalised by hand:
    torch's CPU softmax kernel takes ~6x as long on them (14-long rows).
    """
    if logits.shape[-1] >= 16:
        return torch.softmax(logits, dim=-1)
    logits = logits.sub_(logits.amax(dim=-1, keepdim=True)).exp_()
    return logits.div_(logits.sum(dim=-1, keepdim=True))


class FastTables(NamedTuple):
    """What the fast MaSA of one grid needs, in the attention dtype.

    The rotary: for float32/float64, ``rotation`` = cos + i sin per channel
    pair (the rotation is then one complex product); for other dtypes (no
    complex counterpart, e.g. bfloat16) and in exported graphs ``cos`` and
    ``signed_sin``. Decomposed
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
    (B, h, w, 2, n, d) one. Same values as :func:`.rmt.apply_rotary` up to rounding.
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


class FastManhattanRelPos(ManhattanRelPos):
    """:class:`.rmt.ManhattanRelPos` that also serves :class:`FastTables`, cached.

    :meth:`fast_tables` keeps the tables of the last few grids in a small LRU
    keyed on grid, form, dtype and device. The cache is no part of the state
    dict. It is dropped whenever ``angle`` or ``decay`` differ from the values
    it was built from, whatever changed them (``load_state_dict``, ``.to()``,
    in-place edits, edits through ``.data``, which no version counter sees):
    each call compares the two small buffers with a copy of them.
    """

    #: Most grids kept; the newest entry is kept even when over the byte budget.
    cache_entries = 4
    cache_bytes = 256 * 2**20

    def __init__(self, embed_dims: int, num_heads: int, init_value: float, heads_range: float) -> None:
        super().__init__(embed_dims, num_heads, init_value, heads_range)
        self._cache: 'OrderedDict[tuple, FastTables]' = OrderedDict()
        self._cache_source: Optional[tuple] = None  # copies of (angle, decay) the cache was built from

    def fast_tables(self, height: int, width: int, decomposed: bool, dtype: torch.dtype) -> FastTables:
        """The tables of a (height, width) grid in ``dtype``, cached; exported, real and uncached."""
        if is_exporting():  # ops of the graph, from its (possibly symbolic) grid size
            return self._build_fast_tables(height, width, decomposed, dtype, complex_rotary=False)
        if self._cache_is_stale():
            self._cache.clear()
            with torch.inference_mode(False):
                self._cache_source = (self.angle.detach().clone(), self.decay.detach().clone())
        key = (height, width, decomposed, dtype, self.decay.device)
        tables = self._cache.get(key)
        if tables is None:
            with torch.inference_mode(False), torch.no_grad():
                tables = self._build_fast_tables(height, width, decomposed, dtype)
            self._cache[key] = tables
            self._evict()
        self._cache.move_to_end(key)
        return tables

    def _cache_is_stale(self) -> bool:
        if torch.compiler.is_compiling():  # buffers are symbolic while exported, and cannot change
            return False
        if self._cache_source is None:
            return True
        return not all(old.dtype == new.dtype and old.device == new.device and old.shape == new.shape
                       and torch.equal(old, new)
                       for old, new in zip(self._cache_source, (self.angle, self.decay)))

    def _build_fast_tables(self, height: int, width: int, decomposed: bool, dtype: torch.dtype,
                           complex_rotary: bool = True) -> FastTables:
        sin, cos = self.rotary(height, width)
        shape = (height, width, -1) if decomposed else (height, width, 1, 1, -1)
        if complex_rotary and dtype in COMPLEX_DTYPES:
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


class FastManhattanSelfAttention(ManhattanSelfAttention):
    """:class:`.rmt.ManhattanSelfAttention` through fused attention and cached tables.

    One fused q/k projection, the cached tables of :class:`FastManhattanRelPos`
    and ``scaled_dot_product_attention`` with the log-decay as its additive
    mask (it recomputes attention in backward instead of storing it); without
    autograd, short sequences with batched GEMMs (see :meth:`_attend`).
    Same arguments and parameters as the reference.
    """

    attn_impl = AttnImpl('fast')

    #: Longest sequence attended with explicit GEMMs at inference, and the
    #: most logits bytes materialised at once (see :meth:`_attend`).
    explicit_max_len = 64
    explicit_logits_bytes = 16 * 2**20

    def forward(self, x: torch.Tensor, relpos: FastManhattanRelPos,
                norm: Optional[nn.LayerNorm] = None) -> torch.Tensor:
        """MaSA of ``norm(x)`` (of ``x`` if ``norm`` is None), channels-last (B, h, w, C)."""
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
        if (torch.is_grad_enabled() or torch.jit.is_tracing() or is_exporting()
                or length > self.explicit_max_len):
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


class FastRMTBlock(RMTBlock):
    """:class:`.rmt.RMTBlock` with the fast MaSA and FFN, computed leanly.

    The CPE's residual is folded into its kernel; without autograd the
    residual sums are written into the branch outputs, and on CPU the block
    runs on a few images at a time (see :data:`INFERENCE_CHUNK_BYTES`).
    Same arguments and parameters as the reference.
    """

    attn_impl = AttnImpl('fast')
    attention_cls = FastManhattanSelfAttention
    ffn_cls = FastConvFFN

    def forward(self, x: torch.Tensor, relpos: FastManhattanRelPos) -> torch.Tensor:
        """The block on channels-last (B, h, w, C) ``x``."""
        block = super().forward
        if not torch.is_grad_enabled() and x.device.type == 'cpu':
            hidden_bytes = x[0].numel() * self.ffn.fc1.out_features // x.shape[-1] * x.element_size()
            return in_image_chunks(lambda part: block(part, relpos), x, hidden_bytes)
        return block(x, relpos)

    def add_position(self, x: torch.Tensor) -> torch.Tensor:
        """x + CPE(x) as one convolution."""
        return self.pos.forward_residual(x)

    def add_branch(self, x: torch.Tensor, branch: torch.Tensor,
                   gamma: Optional[torch.Tensor]) -> torch.Tensor:
        """x + drop_path(gamma * branch); without autograd summed into the branch's tensor."""
        branch = self.drop_path(branch if gamma is None else gamma * branch)
        if not torch.is_grad_enabled() and branch.dtype == x.dtype:
            return branch.add_(x)
        return x + branch


class FastRMTStage(RMTStage):
    """:class:`.rmt.RMTStage` of fast blocks sharing cached tables."""

    relpos_cls = FastManhattanRelPos
    block_cls = FastRMTBlock


class ImageChunkedStem(nn.Sequential):
    """The stem, on a few images at a time in CPU inference while in eval mode.

    In eval mode BatchNorm uses its running statistics, so every image is
    computed on its own; in train mode the whole batch goes through at once.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training or torch.is_grad_enabled() or x.device.type != 'cpu':
            return super().forward(x)
        first_map_bytes = self[0].out_channels * -(-x.shape[2] // 2) * -(-x.shape[3] // 2) * x.element_size()
        return in_image_chunks(super().forward, x, first_map_bytes)
