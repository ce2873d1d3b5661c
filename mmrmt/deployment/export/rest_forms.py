"""ResT's export row: its attention (EMSA) as a graph of plain ONNX ops.

:class:`ExportEfficientMultiHeadAttention` has the parameters of the fast
attention (so a model's modules take it in place, :mod:`.backbone_forms`)
and computes the same function: one head as
:func:`.plain_attention.plain_attention`, mixed heads as
:func:`mmrmt.models.backbones.rest.mixed_head_plain_attention` with
:func:`expm1_by_tanh`, both in runs in a graph of fixed shapes.
"""
from dataclasses import replace

import torch

from mmrmt.models.backbones.rest import IMPLEMENTATIONS, FastEfficientMultiHeadAttention, mixed_head_plain_attention
from .fixed_shapes import exports_fixed_shapes
from .plain_attention import attention_runs, plain_attention


def expm1_by_tanh(x: torch.Tensor) -> torch.Tensor:
    """``exp(x) - 1`` as ``2 tanh(x / 2) / (1 - tanh(x / 2))``, for ``x <= 0``: ONNX has no expm1, and
    this is as precise relative to the result (the denominator stays in [1, 2)), where ``exp(x) - 1``
    would cancel for small ``x``."""
    half = torch.tanh(x / 2)
    return 2 * half / (1 - half)


class ExportEfficientMultiHeadAttention(FastEfficientMultiHeadAttention):
    """:class:`FastEfficientMultiHeadAttention` in ONNX's ops (opset 11 on), in runs in a graph of fixed
    shapes (:func:`.plain_attention.attention_runs`: of images, or of queries; mixed heads are never
    split)."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The heads' attention of (B, N, n, d) ``q`` over (B, N', n, d) ``k`` and ``v``; (B, N, n, d)."""
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if self.num_heads == 1:
            return plain_attention(q, k, v).transpose(1, 2)
        runs = attention_runs(q, k, leading=1) if exports_fixed_shapes() else None
        return mixed_head_plain_attention(q, k, v, self.transform_conv, self.scale, runs,
                                          expm1_by_tanh).transpose(1, 2)


#: The export row of ResT's implementations: the fast row with the export attention.
EXPORT_IMPLEMENTATION = replace(IMPLEMENTATIONS['fast'], attention=ExportEfficientMultiHeadAttention)
