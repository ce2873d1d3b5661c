"""RMT's FFN in its fast form: same parameters as :class:`.ffn.ConvFFN`, less kept for backward."""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ...layers import norm_then_project, run_mode
from .depthwise_conv import depthwise_conv_channels_last
from .ffn import ConvFFN


class _GeluConvProjection(torch.autograd.Function):
    """``fc2(a + dwconv(a))`` with ``a = gelu(hidden)``, keeping only ``hidden``.

    Autograd would keep three hidden-sized tensors (the GELU input, its
    output for the conv, the conv sum for ``fc2``); this keeps the first and
    recomputes the GELU and the conv in backward. ``conv_weight`` already
    holds the residual (see :meth:`ChannelsLastDWConv.residual_weight`).
    Runs in the dtype of ``hidden`` (the autocast dtype under autocast) and
    returns the parameter gradients in the parameters' dtypes.
    """

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, conv_weight: torch.Tensor, conv_bias: torch.Tensor,
                fc2_weight: torch.Tensor, fc2_bias: torch.Tensor, padding: int) -> torch.Tensor:
        params = tuple(p.to(hidden.dtype) for p in (conv_weight, conv_bias, fc2_weight, fc2_bias))
        ctx.padding = padding
        ctx.param_dtypes = tuple(p.dtype for p in (conv_weight, conv_bias, fc2_weight, fc2_bias))
        ctx.save_for_backward(hidden, *params[:3])
        with torch.autocast(hidden.device.type, enabled=False):
            mixed = depthwise_conv_channels_last(F.gelu(hidden), params[0], params[1], padding)
            return F.linear(mixed, params[2], params[3])

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        hidden, conv_weight, conv_bias, fc2_weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_out = grad_out.to(hidden.dtype).reshape(-1, grad_out.shape[-1])
        activated = F.gelu(hidden)
        grad_fc2_weight = grad_fc2_bias = None
        if needs[3]:
            mixed = depthwise_conv_channels_last(activated, conv_weight, conv_bias, ctx.padding)
            grad_fc2_weight = grad_out.t().mm(mixed.reshape(-1, mixed.shape[-1]))
            del mixed
        if needs[4]:
            grad_fc2_bias = grad_out.sum(0)
        grad_hidden = grad_conv_weight = grad_conv_bias = None
        if any(needs[:3]):
            grad_mixed = grad_out.mm(fc2_weight).view(hidden.shape).permute(0, 3, 1, 2)
            grad_activated, grad_conv_weight, grad_conv_bias = torch.ops.aten.convolution_backward(
                grad_mixed, activated.permute(0, 3, 1, 2), conv_weight, [conv_weight.shape[0]], [1, 1],
                [ctx.padding] * 2, [1, 1], False, [0, 0], conv_weight.shape[0],
                [needs[0], needs[1], needs[2]])
            del grad_mixed
            if needs[0]:
                grad_hidden = torch.ops.aten.gelu_backward(grad_activated.permute(0, 2, 3, 1), hidden)
        grads = (grad_conv_weight, grad_conv_bias, grad_fc2_weight, grad_fc2_bias)
        grads = tuple(g if g is None else g.to(dtype) for g, dtype in zip(grads, ctx.param_dtypes))
        return (grad_hidden, *grads, None)


class FastConvFFN(ConvFFN):
    """:class:`.ffn.ConvFFN` computed leanly, same parameters, optionally after its pre-norm.

    The residual is folded into the conv kernel's centre tap, the GELU runs
    in place at inference, and in training only the fc1 output is kept for
    backward (the GELU and the conv are recomputed there; with ``norm``,
    the norm's output too).
    """

    def forward(self, x: torch.Tensor, norm: Optional[nn.LayerNorm] = None) -> torch.Tensor:
        """The FFN of ``norm(x)`` (of ``x`` if ``norm`` is None)."""
        hidden, = norm_then_project(x, norm, [(self.fc1.weight, self.fc1.bias)])
        if run_mode.keeps_autograd():
            return _GeluConvProjection.apply(hidden, self.dwconv.residual_weight(), self.dwconv.conv.bias,
                                             self.fc2.weight, self.fc2.bias, self.dwconv.conv.padding[0])
        return self.fc2(self.dwconv.forward_residual(torch.ops.aten.gelu_(hidden)))
