"""LayerNorm followed by linear projections, keeping only the norm's input."""
from typing import Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from .run_mode import autocast_dtype, keeps_autograd


class _NormThenProject(torch.autograd.Function):
    """``[linear(layer_norm(x), W_i, b_i) for each i]`` storing ``x``, not the norm's output.

    Autograd would keep both the norm's input (for its own backward) and its
    output (for the projections' weight gradients); the output is recomputed
    in backward instead. Under autocast the norm runs in the input's dtype
    and the projections in the autocast dtype, as autocast would run them;
    gradients come back in the dtypes of their inputs.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, norm_weight: torch.Tensor, norm_bias: torch.Tensor, eps: float,
                compute_dtype: torch.dtype, *projections: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        ctx.set_materialize_grads(False)  # an unused output gets None, its projection no gradient
        ctx.eps, ctx.compute_dtype = eps, compute_dtype
        ctx.param_dtypes = tuple(p.dtype for p in projections)
        weights = tuple(p.to(compute_dtype) for p in projections[::2])
        ctx.save_for_backward(x, norm_weight, norm_bias, *weights)
        with torch.autocast(x.device.type, enabled=False):
            normed = F.layer_norm(x, x.shape[-1:], norm_weight, norm_bias, eps).to(compute_dtype)
            return tuple(F.linear(normed, weight, bias.to(compute_dtype))
                         for weight, bias in zip(weights, projections[1::2]))

    @staticmethod
    def backward(ctx, *grad_outs: Optional[torch.Tensor]) -> Tuple[Optional[torch.Tensor], ...]:
        x, norm_weight, norm_bias, *weights = ctx.saved_tensors
        needs = ctx.needs_input_grad
        shape = x.shape[-1:]
        normed, mean, rstd = torch.ops.aten.native_layer_norm(x, shape, norm_weight, norm_bias, ctx.eps)
        normed = normed.to(ctx.compute_dtype).reshape(-1, shape[0])
        grad_normed = None
        grad_projections = []
        for i, (weight, grad) in enumerate(zip(weights, grad_outs)):
            if grad is None:
                grad_projections += [None, None]
                continue
            grad = grad.to(ctx.compute_dtype).reshape(-1, grad.shape[-1])
            grad_weight = grad.t().mm(normed) if needs[5 + 2 * i] else None
            grad_bias = grad.sum(0) if needs[6 + 2 * i] else None
            grad_projections += [grad_weight, grad_bias]
            if any(needs[:3]):
                grad_normed = grad.mm(weight) if grad_normed is None else grad_normed.addmm_(grad, weight)
        grad_projections = [g if g is None else g.to(dtype)
                            for g, dtype in zip(grad_projections, ctx.param_dtypes)]
        grad_x = grad_norm_weight = grad_norm_bias = None
        if grad_normed is not None:
            grad_x, grad_norm_weight, grad_norm_bias = torch.ops.aten.native_layer_norm_backward(
                grad_normed.to(x.dtype).view(x.shape), x, shape, mean, rstd, norm_weight, norm_bias,
                list(needs[:3]))
        return (grad_x, grad_norm_weight, grad_norm_bias, None, None, *grad_projections)


def norm_then_project(x: torch.Tensor, norm: Optional[nn.LayerNorm],
                      projections: Sequence[Tuple[torch.Tensor, torch.Tensor]]) -> Tuple[torch.Tensor, ...]:
    """``linear(norm(x), weight, bias)`` for each (weight, bias); no norm if ``norm`` is None.

    Same values as applying ``norm`` then the projections; with autograd the
    norm's output is recomputed in backward instead of kept. Without autograd
    (see :func:`.run_mode.keeps_autograd`: a traced or exported forward keeps none), it is the plain ops.
    """
    if norm is None or not keeps_autograd():
        normed = x if norm is None else norm(x)
        return tuple(F.linear(normed, weight, bias) for weight, bias in projections)
    compute_dtype = autocast_dtype(x) or x.dtype
    flat = [t for pair in projections for t in pair]
    return _NormThenProject.apply(x, norm.weight, norm.bias, norm.eps, compute_dtype, *flat)
