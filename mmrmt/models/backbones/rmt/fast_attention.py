"""MaSA in its fast form: fused projections and attention, cached tables, same parameters."""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ...layers import attention_runs, norm_then_project, plain_attention, run_mode
from .attention import ManhattanSelfAttention
from .fast_relative_position import FastManhattanRelPos, FastTables, apply_rotary_signed, rotate_qk


def softmax_(logits: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim, in place.

    Rows shorter than 16 elements are exponentiated and normalised by hand:
    torch's CPU softmax kernel is slower on them (docs/benchmark.md).
    """
    if logits.shape[-1] >= 16:
        return torch.softmax(logits, dim=-1)
    logits = logits.sub_(logits.amax(dim=-1, keepdim=True)).exp_()
    return logits.div_(logits.sum(dim=-1, keepdim=True))


def attention_by_grid_rows(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask_h: torch.Tensor,
                           mask_w: torch.Tensor, scale: float) -> torch.Tensor:
    """Full MaSA's ``softmax(scale q k^T + log-decay) v`` for a graph of fixed shapes, in plain ops, with
    the Manhattan log-decay added as its row and column terms; (B, n, hw, d) ``q``, ``k``, ``v`` of an
    (h, w) grid in, as ``q`` out.

    The log-decay of tokens (y, x) and (y', x') is ``decay_n (|y - y'| +
    |x - x'|)``: ``mask_w`` (1, n, w, w) added to the logits viewed as
    (B, n, rows, w, h, w), then ``mask_h`` (1, n, h, h), spread over the
    key columns, to them viewed as (B, n, rows, w, hw), so that no (hw, hw)
    table exists for a runtime to fold into a constant per block. (Two
    constants added to one view are summed into one by OpenVINO: the whole
    table again.) The queries attend a few whole grid rows at a time
    (:func:`.plain_attention.attention_runs`).
    """
    batch, heads, length, _ = q.shape
    height, width = mask_h.shape[-1], mask_w.shape[-1]
    run_queries = attention_runs(q, k, leading=0, queries_unit=width)[1]
    q = q * scale
    keys_t = k.transpose(-1, -2)
    column_terms = mask_w[:, :, None, :, None, :]  # over (B, n, rows, w, h, w)
    runs = []
    for start in range(0, length, run_queries):  # whole grid rows: (y, x) for y in rows, every x
        mask_rows = mask_h[:, :, start // width:(start + run_queries) // width]
        logits = torch.matmul(q[..., start:start + run_queries, :], keys_t)
        rows = mask_rows.shape[2]
        logits = logits.reshape(batch, heads, rows, width, height, width) + column_terms
        row_terms = mask_rows[..., None].expand(-1, -1, -1, -1, width).reshape(1, heads, rows, 1, length)
        logits = logits.reshape(batch, heads, rows, width, length) + row_terms
        weights = torch.softmax(logits.reshape(batch, heads, rows * width, length), dim=-1)
        runs.append(torch.matmul(weights, v))
    return torch.cat(runs, dim=-2) if len(runs) > 1 else runs[0]


class FastManhattanSelfAttention(ManhattanSelfAttention):
    """:class:`.attention.ManhattanSelfAttention` through fused attention and cached tables.

    One fused q/k projection (after the block's pre-norm when given it, the
    norm's output then recomputed in backward instead of kept), the cached
    tables of :class:`.fast_relative_position.FastManhattanRelPos` and
    ``scaled_dot_product_attention`` with the log-decay as its additive mask
    (it recomputes attention in backward instead of storing it); without
    autograd, short sequences with batched GEMMs (see :meth:`_attend`).
    Same arguments and parameters as the reference.
    """

    #: Longest sequence attended with explicit GEMMs at inference, and the
    #: most logits bytes materialised at once (see :meth:`_attend`).
    explicit_max_len = 64
    explicit_logits_bytes = 16 * 2**20

    def forward(self, x: torch.Tensor, relpos: FastManhattanRelPos,
                norm: Optional[nn.LayerNorm] = None) -> torch.Tensor:
        """MaSA of ``norm(x)`` (of ``x`` if ``norm`` is None), channels-last (B, h, w, C)."""
        if run_mode.is_exporting():
            return self._export_forward(x, relpos, norm)
        batch, height, width, channels = x.shape
        # q and k from one projection, so that one op rotates both; v apart,
        # dense channels-last for the LCE conv (a slice of a fused q/k/v
        # projection would cost zero-filled gradients and a strided conv).
        qk_weight = torch.cat((self.q_proj.weight, self.k_proj.weight))
        qk_bias = torch.cat((self.q_proj.bias, self.k_proj.bias))
        qk, v = norm_then_project(x, norm, [(qk_weight, qk_bias), (self.v_proj.weight, self.v_proj.bias)])
        qk = qk.view(batch, height, width, 2, self.num_heads, self.head_dims)
        context = self.lepe(v)
        v = v.view(batch, height, width, self.num_heads, self.head_dims)
        tables = relpos.fast_tables(height, width, self.decomposed, qk.dtype)
        if self.decomposed:
            out = self._fast_decomposed(qk, v, tables)
        else:
            out = self._fast_full(qk, v, tables)
        # Summed into the LCE output's own dense tensor (the conv's backward
        # does not need its output): no merged-heads copy, no new tensor.
        merged = context.contiguous().view(out.shape).add_(out)
        return self.out_proj(merged.view(batch, height, width, channels))

    def _export_forward(self, x: torch.Tensor, relpos: FastManhattanRelPos,
                        norm: Optional[nn.LayerNorm]) -> torch.Tensor:
        """The exported form of :meth:`forward`: fewer copies in an onnxruntime graph.

        q, k and v from their own projections (no split of a fused one, a
        copy in the graph), rotated channels-last (B, h, w, n, d), then each
        moved once into the layout of each pass: onnxruntime's MatMul takes
        dense operands only, so each layout change is a Transpose node. The
        decomposed attention is :func:`plain_attention` over 5-D operands
        (ONNX ops of opset 11 on; SDPA would need 14 and be written as the
        same nodes), the full one too where its decay is one table, else
        :func:`attention_by_grid_rows`
        (:meth:`.FastManhattanRelPos.exports_decay_table`).
        """
        batch, height, width, channels = x.shape
        q, k, v = norm_then_project(x, norm, [(self.q_proj.weight, self.q_proj.bias),
                                              (self.k_proj.weight, self.k_proj.bias),
                                              (self.v_proj.weight, self.v_proj.bias)])
        context = self.lepe(v)
        tables = relpos.fast_tables(height, width, self.decomposed, q.dtype)
        cos, signed_sin = (table.reshape(height, width, 1, self.head_dims)
                           for table in (tables.cos, tables.signed_sin))
        q, k = (apply_rotary_signed(t.view(batch, height, width, self.num_heads, self.head_dims),
                                    signed_sin, cos) for t in (q, k))
        v = v.view(q.shape)
        if self.decomposed:  # rows over (B, h, n, w, d), then columns over (B, w, n, h, d)
            rows = plain_attention(*(t.transpose(2, 3) for t in (q, k, v)), tables.mask_w, self.scale)
            out = plain_attention(q.permute(0, 2, 3, 1, 4), k.permute(0, 2, 3, 1, 4), rows.permute(0, 3, 2, 1, 4),
                                  tables.mask_h, self.scale).permute(0, 3, 1, 2, 4)
        else:  # all tokens over (B, n, hw, d)
            q, k, v = (t.reshape(batch, height * width, self.num_heads, self.head_dims).transpose(1, 2)
                       for t in (q, k, v))
            out = (plain_attention(q, k, v, tables.mask, self.scale) if tables.mask is not None
                   else attention_by_grid_rows(q, k, v, tables.mask_h, tables.mask_w, self.scale)).transpose(1, 2)
        return self.out_proj(context + out.reshape(batch, height, width, channels))

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        """softmax(scale * q k^T + mask) v over (N, heads, L, d): the k scale folded in.

        With autograd, and for sequences over ``explicit_max_len`` tokens,
        SDPA's fused kernel (its backward recomputes the attention instead of
        keeping it). Without autograd, shorter sequences are attended with
        batched GEMMs and an in-place softmax, a few images at a time so that
        the logits stay under ``explicit_logits_bytes``: at such lengths the
        fused kernel's per-block work costs more than the whole product.
        Traced (FLOP counting), it is always the one SDPA op; exported, see
        :meth:`_export_forward`.
        """
        batch, heads, length, _ = q.shape
        if run_mode.keeps_autograd() or run_mode.traces_plain_ops() or length > self.explicit_max_len:
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
