"""RMT's export row: the fast relative position and MaSA whose graph forms hold little at once in a graph
of fixed shapes.

The fast classes record plain ONNX ops by themselves
(``FastManhattanSelfAttention.graph_forward``); these subclasses with the
same parameters (so a model's modules take them in place,
:mod:`.backbone_forms`) add what a runtime running a graph of fixed shapes
needs: the rotary's pair swap as a small MatMul
(:func:`rotate_by_permutation`), attention in runs
(:func:`.plain_attention.fixed_shape_runs`), and, for a full stage whose
decay table would be large, the decay added by grid rows
(:func:`attention_by_grid_rows`).
"""
from dataclasses import replace
from typing import Optional, Tuple

import torch

from mmrmt.models.backbones.rmt.fast_attention import FastManhattanSelfAttention
from mmrmt.models.backbones.rmt.fast_relative_position import FastManhattanRelPos, FastTables
from mmrmt.models.backbones.rmt.implementations import IMPLEMENTATIONS
from .fixed_shapes import exports_fixed_shapes
from .plain_attention import attention_runs, fixed_shape_runs, within_export_budget


def swap_pairs_by_permutation(x: torch.Tensor) -> torch.Tensor:
    """``x`` with the members of each channel pair swapped, as a product with the constant pair-swap
    permutation: ONNX runtimes run the step -1 Slice that ``flip`` becomes far slower than this small
    MatMul (docs/deployment.md, "What is dynamic")."""
    channels = x.shape[-1]
    permutation = torch.eye(channels, dtype=x.dtype, device=x.device)[[i ^ 1 for i in range(channels)]]
    return torch.matmul(x, permutation)


def rotate_by_permutation(x: torch.Tensor, signed_sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """:func:`mmrmt.models.backbones.rmt.fast_relative_position.apply_rotary_signed` with the pairs swapped
    by :func:`swap_pairs_by_permutation`, after the product with ``signed_sin``: swapping the pairs of
    ``signed_sin`` negates it, so ``swap(x) signed_sin = -swap(x signed_sin)``, exactly. OpenVINO's bf16
    graph ran a swap followed by the product in float32 (the product fused into the MatMul), one before
    it in bf16 (docs/deployment.md)."""
    return x * cos - swap_pairs_by_permutation(x * signed_sin)


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
    """:class:`FastManhattanRelPos` whose graph tables of full stages are the 1-D decays ``mask_h`` and
    ``mask_w`` unless :meth:`exports_decay_table`."""

    def graph_tables(self, height: int, width: int, decomposed: bool, dtype: torch.dtype) -> FastTables:
        """The graph tables of a (height, width) grid in ``dtype``: one-dimensional decays for full
        stages too where the decay table would be too large."""
        one_dimensional = decomposed or not self.exports_decay_table(height, width, dtype)
        return super().graph_tables(height, width, one_dimensional, dtype)

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
    """:class:`FastManhattanSelfAttention` whose graph form attends in the runs of a graph of fixed shapes
    (:func:`.plain_attention.fixed_shape_runs`), a full stage without its decay table by grid rows
    (:func:`attention_by_grid_rows`)."""

    def graph_rotate(self, x: torch.Tensor, signed_sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
        return rotate_by_permutation(x, signed_sin, cos)

    def graph_runs(self, q: torch.Tensor, k: torch.Tensor) -> Optional[Tuple[int, int]]:
        return fixed_shape_runs(q, k)

    def graph_full_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             tables: FastTables) -> torch.Tensor:
        if tables.mask is None:
            return attention_by_grid_rows(q, k, v, tables.mask_h, tables.mask_w, self.scale)
        return super().graph_full_attention(q, k, v, tables)


#: The export row of RMT's implementations: the fast row with the export relative position and MaSA.
EXPORT_IMPLEMENTATION = replace(IMPLEMENTATIONS['fast'], relpos=ExportManhattanRelPos,
                                attention=ExportManhattanSelfAttention)
