"""The traced row: the fast classes whose inference is not plain torch ops, in plain torch ops.

A FLOP counter traces a model (``torch.jit.trace``) and counts the ops it
knows; an autograd Function is one op it does not look into, and a loop over
a batch bakes the traced batch into the graph. Without autograd (which a
traced forward never keeps, see :mod:`mmrmt.models.layers.run_mode`) the
fast classes compute with plain ops but for their attention's inference
paths, which these subclasses (same parameters, same function) replace:

* :class:`TracedManhattanSelfAttention`: RMT's MaSA always through the one
  ``scaled_dot_product_attention`` op (eager inference attends short
  sequences with batched GEMMs, a few images at a time);
* :class:`TracedEfficientMultiHeadAttention`: ResT's mixed heads as
  :func:`mmrmt.models.backbones.rest.mixed_head_plain_attention` (eager, an
  autograd Function that never holds a whole score map).
"""
from dataclasses import replace

import torch
import torch.nn.functional as F

from mmrmt.models.backbones.rest import (IMPLEMENTATIONS as REST_IMPLEMENTATIONS, FastEfficientMultiHeadAttention,
                                         mixed_head_plain_attention)
from mmrmt.models.backbones.rmt.fast_attention import FastManhattanSelfAttention
from mmrmt.models.backbones.rmt.implementations import IMPLEMENTATIONS as RMT_IMPLEMENTATIONS


class TracedManhattanSelfAttention(FastManhattanSelfAttention):
    """:class:`FastManhattanSelfAttention` attending every sequence through SDPA."""

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """softmax(scale * q k^T + mask) v over (N, heads, L, d), as the one SDPA op."""
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)


class TracedEfficientMultiHeadAttention(FastEfficientMultiHeadAttention):
    """:class:`FastEfficientMultiHeadAttention` with its mixed heads in plain ops."""

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """The heads' attention of (B, N, n, d) ``q`` over (B, N', n, d) ``k`` and ``v``; (B, N, n, d)."""
        if self.num_heads == 1:
            return super().attend(q, k, v)
        return mixed_head_plain_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                          self.transform_conv, self.scale).transpose(1, 2)


#: The traced rows of RMT's and ResT's implementations: the fast rows with the traced attention.
RMT_TRACED_IMPLEMENTATION = replace(RMT_IMPLEMENTATIONS['fast'], attention=TracedManhattanSelfAttention)
REST_TRACED_IMPLEMENTATION = replace(REST_IMPLEMENTATIONS['fast'], attention=TracedEfficientMultiHeadAttention)
