"""RMT's export row: the fast relative position and MaSA as graphs of plain ONNX ops.

Subclasses of the fast forms with the same parameters (so a model's modules
take them in place, :mod:`.backbone_forms`), computing the same function:

* :class:`ExportManhattanRelPos`: the tables as ops of the graph, computed
  from its (possibly symbolic) grid size, real (ONNX has no complex
  numbers) and uncached, so that a dynamic graph serves any input size.
* :class:`ExportManhattanSelfAttention`: q, k and v from their own
  projections, rotated channels-last, then moved once into each pass's
  layout; attention as :func:`.plain_attention.plain_attention` (opset 11
  on), or, for a full stage of a fixed-shape graph whose decay table would
  be large, :func:`attention_by_grid_rows`.
"""
from dataclasses import replace
from typing import Optional

import torch
from torch import nn

from mmrmt.models.backbones.rmt.fast_attention import FastManhattanSelfAttention
from mmrmt.models.backbones.rmt.fast_relative_position import FastManhattanRelPos, FastTables
from mmrmt.models.backbones.rmt.implementations import IMPLEMENTATIONS
from mmrmt.models.layers import norm_then_project
from .fixed_shapes import exports_fixed_shapes
from .plain_attention import attention_runs, plain_attention, within_export_budget


def swap_pairs_by_permutation(x: torch.Tensor) -> torch.Tensor:
    """``x`` with the members of each channel pair swapped, as a product with the constant pair-swap
    permutation: onnxruntime runs the step -1 Slice that ``flip`` becomes far slower than this small
    MatMul (docs/deployment.md, "What is dynamic")."""
    channels = x.shape[-1]
    permutation = torch.eye(channels, dtype=x.dtype, device=x.device)[[i ^ 1 for i in range(channels)]]
    return torch.matmul(x, permutation)


def rotate_by_permutation(x: torch.Tensor, signed_sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """:func:`mmrmt.models.backbones.rmt.fast_relative_position.apply_rotary_signed` with the pairs
    swapped by :func:`swap_pairs_by_permutation`."""
    return torch.addcmul(x * cos, swap_pairs_by_permutation(x), signed_sin)


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


class ExportManhattanRelPos(FastManhattanRelPos):
    """:class:`FastManhattanRelPos` whose tables are ops of the graph: real, uncached and, for full
    stages, the 1-D decays ``mask_h`` and ``mask_w`` unless :meth:`exports_decay_table`."""

    def fast_tables(self, height: int, width: int, decomposed: bool, dtype: torch.dtype) -> FastTables:
        """The tables of a (height, width) grid in ``dtype``, computed from the graph's grid size."""
        one_dimensional = decomposed or not self.exports_decay_table(height, width, dtype)
        return self._build_fast_tables(height, width, one_dimensional, dtype, complex_rotary=False)

    def exports_decay_table(self, height: int, width: int, dtype: torch.dtype) -> bool:
        """Whether a full stage's export reads its log-decay as one (1, n, hw, hw) table.

        A graph of fixed shapes does so only where the table takes at most
        :data:`.plain_attention.EXPORT_LOGITS_BYTES`: a runtime folds it into
        a constant per block, which grows with the fourth power of the image
        side. Larger, the export form adds its row and column terms by grid
        rows (:func:`attention_by_grid_rows`), one broadcast add more over
        the logits, slower where the table is small. A dynamic graph computes
        the table in each run and holds whole logits of its size anyway: it
        reads the table. (The figures: docs/deployment.md, "Peak memory of
        one large image".)
        """
        if not exports_fixed_shapes():
            return True
        return within_export_budget(self.decay.numel() * (height * width) ** 2 * dtype.itemsize)


class ExportManhattanSelfAttention(FastManhattanSelfAttention):
    """:class:`FastManhattanSelfAttention` as an onnxruntime graph with few copies.

    q, k and v from their own projections (no split of a fused one, a copy
    in the graph), rotated channels-last (B, h, w, n, d), then each moved
    once into the layout of each pass: onnxruntime's MatMul takes dense
    operands only, so each layout change is a Transpose node. The
    decomposed attention is :func:`.plain_attention.plain_attention` over
    5-D operands (ONNX ops of opset 11 on; SDPA would need 14 and be written
    as the same nodes), the full one too where its decay is one table, else
    :func:`attention_by_grid_rows` (:meth:`ExportManhattanRelPos.exports_decay_table`).
    """

    def forward(self, x: torch.Tensor, relpos: ExportManhattanRelPos,
                norm: Optional[nn.LayerNorm] = None) -> torch.Tensor:
        """MaSA of ``norm(x)`` (of ``x`` if ``norm`` is None), channels-last (B, h, w, C)."""
        batch, height, width, channels = x.shape
        q, k, v = norm_then_project(x, norm, [(self.q_proj.weight, self.q_proj.bias),
                                              (self.k_proj.weight, self.k_proj.bias),
                                              (self.v_proj.weight, self.v_proj.bias)])
        context = self.lepe(v)
        tables = relpos.fast_tables(height, width, self.decomposed, q.dtype)
        cos, signed_sin = (table.reshape(height, width, 1, self.head_dims)
                           for table in (tables.cos, tables.signed_sin))
        q, k = (rotate_by_permutation(t.view(batch, height, width, self.num_heads, self.head_dims),
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


#: The export row of RMT's implementations: the fast row with the export relative position and MaSA.
EXPORT_IMPLEMENTATION = replace(IMPLEMENTATIONS['fast'], relpos=ExportManhattanRelPos,
                                attention=ExportManhattanSelfAttention)
