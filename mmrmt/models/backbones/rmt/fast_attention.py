"""MaSA in its fast form: fused projections and attention, cached tables, same parameters."""
from typing import Optional, Tuple

import torch
from torch import nn

from ...layers import norm_then_project, run_mode
from ...layers.fused_attention import attention_dtype, scaled_dot_product_attention
from ...layers.plain_attention import plain_attention
from .attention import ManhattanSelfAttention
from .depthwise_conv import depthwise_conv_channels_last
from .fast_relative_position import FastManhattanRelPos, FastTables, apply_rotary_signed, rotate_qk


def softmax_(logits: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim, in place.

    Rows of 16 elements and more go through torch's kernel writing over its
    input (same values as ``torch.softmax``, no new tensor); shorter rows are
    exponentiated and normalised by hand: torch's CPU softmax kernel is
    slower on them (docs/benchmark.md).
    """
    if logits.shape[-1] >= 16:
        return torch.ops.aten._softmax.out(logits, -1, False, out=logits)
    logits = logits.sub_(logits.amax(dim=-1, keepdim=True)).exp_()
    return logits.div_(logits.sum(dim=-1, keepdim=True))


class FastManhattanSelfAttention(ManhattanSelfAttention):
    """:class:`.attention.ManhattanSelfAttention` through fused attention and cached tables.

    One fused q/k projection (after the block's pre-norm when given it, the
    norm's output then recomputed in backward instead of kept), the cached
    tables of :class:`.fast_relative_position.FastManhattanRelPos` and
    ``scaled_dot_product_attention`` with the log-decay as its additive mask
    (it recomputes attention in backward instead of storing it); without
    autograd, short sequences with batched GEMMs (see :meth:`_attend`).
    From v and the rotary on, attention and the LCE compute in
    :func:`...layers.fused_attention.attention_dtype` (with autograd, half
    precision on the CPU in float32, whose fused and depthwise-conv
    backwards are the faster, AMX tiles or not; q and k converted in the
    pass that lays them out). While a graph is recorded, its graph form
    (:meth:`graph_forward`). Same arguments and parameters as the
    reference.
    """

    #: Longest sequence attended with explicit GEMMs at inference, and the
    #: most logits bytes materialised at once (see :meth:`_attend`).
    explicit_max_len = 64
    explicit_logits_bytes = 16 * 2**20

    def forward(self, x: torch.Tensor, relpos: FastManhattanRelPos,
                norm: Optional[nn.LayerNorm] = None) -> torch.Tensor:
        """MaSA of ``norm(x)`` (of ``x`` if ``norm`` is None), channels-last (B, h, w, C)."""
        if run_mode.records_graph():
            return self.graph_forward(x, relpos, norm)
        batch, height, width, channels = x.shape
        # q and k from one projection, so that one op rotates both; v apart,
        # dense channels-last for the LCE conv (a slice of a fused q/k/v
        # projection would cost zero-filled gradients and a strided conv).
        qk_weight = torch.cat((self.q_proj.weight, self.k_proj.weight))
        qk_bias = torch.cat((self.q_proj.bias, self.k_proj.bias))
        qk, v = norm_then_project(x, norm, [(qk_weight, qk_bias), (self.v_proj.weight, self.v_proj.bias)])
        qk = qk.view(batch, height, width, 2, self.num_heads, self.head_dims)
        dtype = self._core_dtype(qk, height, width)
        tables = self._tables(relpos, height, width, dtype)
        with torch.autocast(x.device.type, enabled=False):  # the core and the LCE in ``dtype``, not autocast's
            v = v.to(dtype)
            conv = self.lepe.conv
            context = depthwise_conv_channels_last(v, conv.weight.to(dtype), conv.bias.to(dtype), conv.padding[0])
            v = v.view(batch, height, width, self.num_heads, self.head_dims)
            out = self._masa(qk, v, tables)
            # Summed into the LCE output's own dense tensor (the conv's backward
            # does not need its output): no merged-heads copy, no new tensor.
            merged = context.contiguous().view(out.shape).add_(out)
        return self.out_proj(merged.view(batch, height, width, channels))

    def graph_forward(self, x: torch.Tensor, relpos: FastManhattanRelPos,
                      norm: Optional[nn.LayerNorm] = None) -> torch.Tensor:
        """What :meth:`forward` computes, in the plain ops every exporter and tracer records (the graph
        form: no complex numbers, cache, autograd Function or in-place write), as a runtime runs it with
        few copies.

        q, k and v from their own projections (no split of a fused one, a
        copy in the graph), rotated channels-last (B, h, w, n, d), then each
        moved once into the layout of each pass: an ONNX runtime's MatMul
        takes dense operands only, so each layout change is a Transpose node. The
        attention is :func:`...layers.plain_attention.plain_attention` over
        4-D operands (:meth:`graph_heads`; ONNX ops of opset 11 on; SDPA would
        need 14 and be written as the same nodes), in the runs of
        :meth:`graph_runs`; a full stage's through
        :meth:`graph_full_attention`; the rotary by :meth:`graph_rotate`.
        """
        batch, height, width, channels = x.shape
        q, k, v = norm_then_project(x, norm, [(self.q_proj.weight, self.q_proj.bias),
                                              (self.k_proj.weight, self.k_proj.bias),
                                              (self.v_proj.weight, self.v_proj.bias)])
        context = self.lepe(v)
        tables = relpos.graph_tables(height, width, self.decomposed, q.dtype)
        cos, signed_sin = (table.reshape(height, width, 1, self.head_dims)
                           for table in (tables.cos, tables.signed_sin))
        q, k = (self.graph_rotate(t.view(batch, height, width, self.num_heads, self.head_dims), signed_sin, cos)
                for t in (q, k))
        v = v.view(q.shape)
        if self.decomposed:  # rows over (B h, n, w, d), then columns over (B w, n, h, d)
            q_rows, k_rows, v_rows = (self.graph_heads(t.transpose(2, 3)) for t in (q, k, v))
            rows = plain_attention(q_rows, k_rows, v_rows, tables.mask_w, self.scale, self.graph_runs(q_rows, k_rows))
            rows = rows.view(batch, height, self.num_heads, width, self.head_dims).transpose(2, 3)  # as q's
            q_columns, k_columns, v_columns = (self.graph_heads(t.permute(0, 2, 3, 1, 4)) for t in (q, k, rows))
            out = plain_attention(q_columns, k_columns, v_columns, tables.mask_h, self.scale,
                                  self.graph_runs(q_columns, k_columns))
            out = out.view(batch, width, self.num_heads, height, self.head_dims).permute(0, 3, 1, 2, 4)
        else:  # all tokens over (B, n, hw, d)
            q, k, v = (t.reshape(batch, height * width, self.num_heads, self.head_dims).transpose(1, 2)
                       for t in (q, k, v))
            out = self.graph_full_attention(q, k, v, tables).transpose(1, 2)
        return self.out_proj(context + out.reshape(batch, height, width, channels))

    @staticmethod
    def graph_heads(x: torch.Tensor) -> torch.Tensor:
        """A decomposed pass's (B, lines, n, L, d) operand as the 4-D (B lines, n, L, d) of a recorded graph:
        a runtime that fuses MatMul, Add, Softmax and MatMul into one attention kernel may do so over 4-D
        operands only (over 5-D ones one ran the four nodes, the logits whole in between;
        docs/deployment.md)."""
        return x.reshape(-1, *x.shape[2:])

    def graph_rotate(self, x: torch.Tensor, signed_sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
        """The rotary of ``x`` in a recorded graph:
        :func:`.fast_relative_position.apply_rotary_signed`."""
        return apply_rotary_signed(x, signed_sin, cos)

    def graph_runs(self, q: torch.Tensor, k: torch.Tensor) -> Optional[Tuple[int, int]]:
        """The runs a recorded graph attends ``q`` over ``k`` in (see
        :func:`...layers.plain_attention.plain_attention`): None, one pass. (The deployment side's graphs of
        fixed shapes split it.)"""
        return None

    def graph_full_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             tables: FastTables) -> torch.Tensor:
        """A full stage's attention of (B, n, hw, d) ``q``, ``k``, ``v`` in a recorded graph, with the
        decay table of :meth:`.fast_relative_position.FastManhattanRelPos.graph_tables`."""
        return plain_attention(q, k, v, tables.mask, self.scale, self.graph_runs(q, k))

    def _tables(self, relpos: FastManhattanRelPos, height: int, width: int, dtype: torch.dtype) -> FastTables:
        """The tables :meth:`_masa` reads for a (height, width) grid in ``dtype``."""
        return relpos.fast_tables(height, width, self.decomposed, dtype)

    def _masa(self, qk: torch.Tensor, v: torch.Tensor, tables: FastTables) -> torch.Tensor:
        """Attention of channels-last (B, h, w, 2, n, d) ``qk`` over (B, h, w, n, d) ``v``, the rotary
        applied: (B, h, w, n, d) or (B, hw, n, d) out."""
        if self.decomposed:
            return self._fast_decomposed(qk, v, tables)
        return self._fast_full(qk, v, tables)

    def _core_dtype(self, qk: torch.Tensor, height: int, width: int) -> torch.dtype:
        """The dtype the rotary, the LCE and attention compute in over a (height, width) grid.

        :func:`...layers.fused_attention.attention_dtype`, but float32 for
        half-precision operands attended with explicit GEMMs (see
        :meth:`_attend`): their scores are scaled, masked and normalised in
        float32, so q, k and v are converted once, in the pass that lays q
        and k out, rather than the scores twice, and the rotary is the
        complex one.
        """
        dtype = attention_dtype(qk)
        longest = max(height, width) if self.decomposed else height * width
        if dtype in (torch.bfloat16, torch.float16) and not run_mode.keeps_autograd() \
                and longest <= self.explicit_max_len:
            return torch.float32
        return dtype

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        """softmax(scale * q k^T + mask) v over (N, heads, L, d): the k scale folded in.

        With autograd, and for sequences over ``explicit_max_len`` tokens,
        SDPA's fused kernel (its backward recomputes the attention instead of
        keeping it). Without autograd, shorter sequences are attended with
        batched GEMMs and an in-place softmax (in float32 or float64: see
        :meth:`_core_dtype`), a few images at a time so that the logits stay
        under ``explicit_logits_bytes``: at such lengths the fused kernel's
        per-block work costs more than the whole product.
        """
        batch, heads, length, _ = q.shape
        if run_mode.keeps_autograd() or length > self.explicit_max_len:
            return scaled_dot_product_attention(q, k, v, mask, self.scale)
        out = v.new_empty(v.shape)
        step = max(1, self.explicit_logits_bytes // (heads * length * length * q.element_size()))
        for start in range(0, batch, step):
            part = slice(start, start + step)
            logits = torch.matmul(q[part], k[part].transpose(-1, -2))
            part_mask = mask if mask.shape[0] == 1 else mask[part]  # full stages: one mask for every image
            torch.matmul(self._weights(logits, part_mask), v[part], out=out[part])
        return out

    def _weights(self, logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``softmax(scale * logits + mask)``, in place of the (float32 or float64) ``logits``."""
        return softmax_(logits.mul_(self.scale).add_(mask))

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
