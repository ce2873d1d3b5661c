"""The second half of ResT's MLP, ``fc2(gelu(hidden))``, keeping only ``hidden`` for backward."""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

from ..layers import run_mode


class _GeluProjection(torch.autograd.Function):
    """``linear(gelu(hidden), weight, bias)``; the GELU is recomputed in backward instead of kept."""

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(hidden, weight)
        return F.linear(F.gelu(hidden), weight, bias)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        hidden, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_out = grad_out.reshape(-1, grad_out.shape[-1])
        grad_hidden = grad_weight = grad_bias = None
        if needs[1]:
            grad_weight = grad_out.t().mm(F.gelu(hidden).reshape(-1, hidden.shape[-1]))
        if needs[2]:
            grad_bias = grad_out.sum(0)
        if needs[0]:
            grad_hidden = torch.ops.aten.gelu_backward(grad_out.mm(weight).view(hidden.shape), hidden)
        return grad_hidden, grad_weight, grad_bias


def gelu_projection(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``F.linear(F.gelu(hidden), weight, bias)``: with autograd only ``hidden`` is kept, without the
    GELU runs in place (``hidden`` is overwritten).

    Under autocast the projection runs in ``hidden``'s dtype (the autocast dtype of fc1's output).
    """
    if not run_mode.keeps_autograd():
        return F.linear(torch.ops.aten.gelu_(hidden), weight, bias)
    with torch.autocast(hidden.device.type, enabled=False):
        return _GeluProjection.apply(hidden, weight.to(hidden.dtype), bias.to(hidden.dtype))
