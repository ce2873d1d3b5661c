"""An exported graph's outputs in onnxruntime or OpenVINO held to a bound derived from the
format, with torch's float64 forward as the reference both float32 computations approximate.

torch (float32) and the runtime (float32, or OpenVINO's bf16) compute one function, each with
its own rounding. Rather than bound their difference by a number fitted to one machine's
result, each is compared with the float64 forward: torch's float32 error measures how much
this network amplifies float32's rounding (``kappa`` of
:func:`helpers.rounding.low_precision_bound`), and the runtime, rounding to ``u`` of its
format in another order, may err by at most ``LAMBDA u max(sqrt(n), kappa)``, ``n`` the
longest sum of the network (:func:`longest_reduction`). Neither the kernels' summation order
nor the thread count enters the bound.
"""
import copy
from typing import Dict, Tuple

import torch
from torch import nn

from mmrmt.deployment.export import TensorModeModel
from mmrmt.deployment.runtime import open_graph, relative_difference, run_session
from .rounding import low_precision_bound, two_implementations

#: The format a runtime's ``--precision`` rounds to.
PRECISION_DTYPES = {'f32': torch.float32, 'bf16': torch.bfloat16}


def longest_reduction(model: nn.Module) -> int:
    """The most terms any convolution's or linear layer's output element sums (a convolution's
    input channels per group times its kernel's area, a linear layer's input features)."""
    terms = [1]
    for module in model.modules():
        if isinstance(module, nn.modules.conv._ConvNd):
            terms.append(module.in_channels // module.groups * module.weight[0, 0].numel())
        elif isinstance(module, nn.Linear):
            terms.append(module.in_features)
    return max(terms)


def layer_count(model: nn.Module) -> int:
    """How many convolutions and linear layers ``model`` has: at most that many sums in series."""
    return sum(isinstance(module, (nn.modules.conv._ConvNd, nn.Linear)) for module in model.modules())


def float32_pair_tolerance(model: nn.Module) -> float:
    """:func:`helpers.rounding.two_implementations` of float32 for ``model``: two float32 runs of it
    (torch and a graph of it) differ by at most this, relative to the values' magnitude."""
    return two_implementations(torch.float32, longest_reduction(model), layer_count(model))


def assert_runtime_within_format(model: TensorModeModel, path: str, inputs: Dict[str, Tuple[torch.Tensor, ...]],
                                 runtime: str = 'onnxruntime', precision: str = 'f32', tokens: int = 1) -> None:
    """For each input, ``path`` run in ``runtime`` at ``precision`` errs from ``model``'s float64
    forward (relative to the largest value, as ``relative_difference``) by at most
    :func:`helpers.rounding.low_precision_bound` of its format, given torch's float32 error.

    ``tokens``: the most tokens an attention sums over, where that exceeds the layers' sums.
    """
    terms = max(longest_reduction(model), tokens)
    exact_model = TensorModeModel(copy.deepcopy(model.model).double(), model.kind == 'backbone').eval()
    session = open_graph(path, runtime, precision)
    model.eval()
    for description, tensors in inputs.items():
        with torch.no_grad():
            full = [output.numpy() for output in model(*tensors)]
            exact = exact_model(*(tensor.double() for tensor in tensors))
        float32_error = relative_difference(exact, full)
        error = relative_difference(exact, run_session(session, tensors))
        bound = low_precision_bound(PRECISION_DTYPES[precision], terms, float32_error)
        assert 0 < float32_error and error <= bound, (
            f'{description}: {runtime} {precision} errs by {error:.2e} of the largest value, more than '
            f'{bound:.2e} (torch float32: {float32_error:.2e}, {terms} terms)')
