"""ResT's export row: the fast attention (EMSA) whose graph form holds little at once in a graph of fixed
shapes.

The fast attention records plain ONNX ops by itself
(``FastEfficientMultiHeadAttention.graph_attend``);
:class:`ExportEfficientMultiHeadAttention` has its parameters (so a model's
modules take it in place, :mod:`.backbone_forms`) and attends in the runs
of a graph of fixed shapes (:func:`.plain_attention.fixed_shape_runs`: of
images, or of queries; mixed heads are never split).
"""
from dataclasses import replace
from typing import Optional, Tuple

import torch

from mmrmt.models.backbones.rest import IMPLEMENTATIONS, FastEfficientMultiHeadAttention
from .plain_attention import fixed_shape_runs


class ExportEfficientMultiHeadAttention(FastEfficientMultiHeadAttention):
    """:class:`FastEfficientMultiHeadAttention` attending in runs in a graph of fixed shapes."""

    def graph_runs(self, q: torch.Tensor, k: torch.Tensor, leading: Optional[int] = None
                   ) -> Optional[Tuple[int, int]]:
        return fixed_shape_runs(q, k, leading)


#: The export row of ResT's implementations: the fast row with the export attention.
EXPORT_IMPLEMENTATION = replace(IMPLEMENTATIONS['fast'], attention=ExportEfficientMultiHeadAttention)
