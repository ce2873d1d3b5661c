"""Running a backbone in float64, float32 and under autocast, and comparing
float32 and autocast with float64 (the reference both approximate)."""
import math
from typing import Dict, List, NamedTuple, Optional, Tuple

import pytest
import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from mmrmt.models import RMT, ResMLP, ResT
from .backbones import RESMLP_TINY, REST_TINY, RMT_TINY
from .rounding import low_precision_bound, relative_error

#: The tiny backbones, by name: RMT's two attention paths, ResT, ResMLP.
TINY_BACKBONES = {
    'rmt-fast': lambda: RMT(RMT_TINY, drop_path_rate=0.),
    'rmt-reference': lambda: RMT(RMT_TINY, drop_path_rate=0., impl='reference'),
    'rest': lambda: ResT(REST_TINY, drop_path_rate=0.),
    'resmlp': lambda: ResMLP(RESMLP_TINY, drop_path_rate=0.),
}


class Run(NamedTuple):
    """Outputs and gradients of one forward and backward pass (float64 for a
    float64 model, float32 otherwise), and how many terms each parameter's
    gradient sums (:func:`gradient_terms`)."""
    outputs: List[torch.Tensor]
    input_grad: torch.Tensor
    grads: Dict[str, torch.Tensor]
    terms: Dict[str, int]
    loss_scale: float = 1.


def build_tiny(name: str, device: str = 'cpu', dtype: torch.dtype = torch.float32) -> nn.Module:
    """A tiny backbone with initialised weights (the same for every dtype), in train mode."""
    torch.manual_seed(0)
    model = TINY_BACKBONES[name]()
    model.init_weights()
    return model.to(device, dtype).train()


def gradient_terms(model: nn.Module) -> Tuple[Dict[str, int], List[RemovableHandle]]:
    """Filled in by the next forward pass: for each parameter, how many terms
    its gradient sums (the positions and images it is applied at).

    A parameter of ``C`` output channels (a weight's or bias's first dimension)
    of a module whose input and output hold ``N`` elements takes part in at
    most ``N / C`` products per element: its gradient sums that many terms.
    """
    terms: Dict[str, int] = {}
    handles = []
    for module_name, module in model.named_modules():
        own = dict(module.named_parameters(recurse=False))
        if not own:
            continue

        def count(module, inputs, output, own=own, prefix=module_name):
            output = output[0] if isinstance(output, (tuple, list)) else output
            size = max(output.numel(), inputs[0].numel() if inputs else 0)
            for name, param in own.items():
                key = f'{prefix}.{name}' if prefix else name
                terms[key] = terms.get(key, 0) + max(size // param.shape[0], 1)
        handles.append(module.register_forward_hook(count))
    return terms, handles


def run(model: nn.Module, image: torch.Tensor, dtype: Optional[torch.dtype] = None, loss_scale: float = 1.) -> Run:
    """Forward ``image`` (under autocast to ``dtype`` unless None) and back-propagate
    a loss that weighs every output element differently, so no gradient hides.

    The loss is multiplied by ``loss_scale`` (a power of two: exact) and the
    gradients divided by it again, as ``torch.amp.GradScaler`` does.
    """
    model.zero_grad()
    image = image.clone().requires_grad_()
    full = torch.float64 if image.dtype == torch.float64 else torch.float32
    terms, handles = gradient_terms(model)
    try:
        with torch.autocast(image.device.type, dtype=dtype or torch.float16, enabled=dtype is not None):
            outputs = model(image)
    finally:
        for handle in handles:
            handle.remove()
    generator = torch.Generator(image.device).manual_seed(1)
    weights = [torch.randn(out.shape, generator=generator, device=image.device).to(full) for out in outputs]
    (loss_scale * sum((out.to(full) * weight).sum() for out, weight in zip(outputs, weights))).backward()
    return Run([out.to(full) for out in outputs], image.grad.to(full) / loss_scale,
               {name: param.grad.to(full) / loss_scale for name, param in model.named_parameters()}, terms, loss_scale)


def finite(result: Run) -> bool:
    return all(torch.isfinite(t).all() for t in (*result.outputs, result.input_grad, *result.grads.values()))


def run_scaled(model: nn.Module, image: torch.Tensor, dtype: torch.dtype, float32: Run) -> Run:
    """:func:`run` under ``dtype`` autocast with a loss scale, chosen as
    ``GradScaler`` does, so no gradient underflows the format's normal range.

    bfloat16 has float32's range: no scale. float16's normal numbers span
    2**-14 to 65504; gradients of a branch behind a 1e-6 layer scale lie below
    the low end unscaled. The scale starts at the largest power of two that
    keeps float32's largest gradient element below float16's maximum, and is
    halved while anything overflows.
    """
    if torch.finfo(dtype).tiny <= torch.finfo(torch.float32).tiny:  # float32's range
        return run(model, image, dtype)
    largest = max(grad.abs().max().item() for grad in (float32.input_grad, *float32.grads.values()))
    scale = 2. ** min(16, math.floor(math.log2(torch.finfo(dtype).max / largest)))
    while True:
        result = run(model, image, dtype, scale)
        if finite(result) or scale < 1:
            return result
        scale /= 2


def tensors(result: Run) -> Dict[str, Tuple[torch.Tensor, int]]:
    """Every tensor a run gives, by name, with the number of terms it sums
    (1 for the outputs and the input gradient: their reductions are inside the
    float32 run's error, see :func:`helpers.rounding.low_precision_bound`)."""
    named = {f'output {index}': (out, 1) for index, out in enumerate(result.outputs)}
    named['input gradient'] = (result.input_grad, 1)
    named.update({f'{name} gradient': (grad, result.terms.get(name, 1)) for name, grad in result.grads.items()})
    everything = torch.cat([grad.flatten() for grad in result.grads.values()])
    named['all gradients'] = (everything, max(result.terms.values()))
    return named


def representable(truth: torch.Tensor, terms: int, dtype: torch.dtype, loss_scale: float) -> bool:
    """Whether the terms a tensor sums lie in ``dtype``'s normal range, so that
    their rounding is relative: its ``terms`` terms average at least
    ``rms / terms`` (``rms`` the root mean square of the tensor), which the loss
    scale multiplies. Below the normal range a number keeps fewer digits (none
    under the smallest subnormal): the format's range, not its precision, sets
    the error there. RMT's query and key gradients behind its 1e-6 layer scales
    lie there: 2**38 below its largest gradients, wider than float16's 2**30.
    """
    rms = truth.double().norm().item() / math.sqrt(truth.numel())
    return rms * loss_scale / terms >= torch.finfo(dtype).tiny


def assert_within_rounding(low: Run, dtype: torch.dtype, full: Run, exact: Run) -> None:
    """Each output, the input gradient, each parameter's gradient and all of them
    together of a run in ``dtype`` (``low``) as close to the float64 run
    (``exact``) as ``dtype``'s rounding allows, given the float32 run's (``full``)
    error (:func:`helpers.rounding.low_precision_bound`).

    A gradient that is zero in exact arithmetic (a bias before a BatchNorm)
    carries rounding noise only, relative to it unbounded in every format:
    there float32's error is as large and the bound follows; the gradients
    together bound that noise against the largest gradients. So do they the
    gradients :func:`representable` rules out.
    """
    low_tensors, full_tensors = tensors(low), tensors(full)
    failures = []
    for name, (truth, _) in tensors(exact).items():
        ours, terms = low_tensors[name]
        if not torch.isfinite(ours).all():
            failures.append(f'{name}: not finite')
            continue
        if not truth.any() or not representable(truth, terms, dtype, low.loss_scale):
            continue
        error = relative_error(ours, truth)
        bound = low_precision_bound(dtype, terms, relative_error(full_tensors[name][0], truth))
        if not error <= bound:
            failures.append(f'{name}: error {error:.2e} > bound {bound:.2e}')
    assert not failures, f'{dtype} errs beyond its rounding: ' + '; '.join(failures)


def assert_autocast_accurate(name: str, image: torch.Tensor, dtype: torch.dtype) -> None:
    """Backbone ``name`` under ``dtype`` autocast computes its float64 outputs
    and gradients on ``image`` within ``dtype``'s rounding."""
    device = image.device.type
    exact = run(build_tiny(name, device, torch.float64), image.double())
    model = build_tiny(name, device)
    full = run(model, image)
    assert_within_rounding(run_scaled(model, image, dtype, full), dtype, full, exact)


#: Marks of a test that needs a GPU: ``pytest -m cuda`` selects them
#: (tools/misc/gpu_check.sh); without CUDA they are skipped.
NEEDS_CUDA = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')]
