"""Running a backbone in float32 and under autocast, and comparing the two."""
from typing import Dict, List, NamedTuple, Optional

import pytest
import torch
from torch import nn

from mmrmt.models import RMT, ResMLP, ResT
from .backbones import REST_TINY, RESMLP_TINY, RMT_TINY

#: Unit roundoff of float16 (11 significant bits) and bfloat16 (8).
UNIT_ROUNDOFF = {torch.float16: 2. ** -11, torch.bfloat16: 2. ** -8}

#: The tiny backbones, by name: RMT's two attention paths, ResT, ResMLP.
TINY_BACKBONES = {
    'rmt-fast': lambda: RMT(RMT_TINY, drop_path_rate=0.),
    'rmt-reference': lambda: RMT(RMT_TINY, drop_path_rate=0., attn_impl='reference'),
    'rest': lambda: ResT(REST_TINY, drop_path_rate=0.),
    'resmlp': lambda: ResMLP(RESMLP_TINY, drop_path_rate=0.),
}


class Run(NamedTuple):
    """Outputs (as float32) and gradients of one forward and backward pass."""
    outputs: List[torch.Tensor]
    input_grad: torch.Tensor
    grads: Dict[str, torch.Tensor]


def build_tiny(name: str, device: str = 'cpu') -> nn.Module:
    """A tiny backbone with initialised weights, in train mode."""
    torch.manual_seed(0)
    model = TINY_BACKBONES[name]()
    model.init_weights()
    return model.to(device).train()


def run(model: nn.Module, image: torch.Tensor, dtype: Optional[torch.dtype] = None) -> Run:
    """Forward ``image`` (under autocast to ``dtype`` unless None) and back-propagate
    a loss that weighs every output element differently, so no gradient hides."""
    model.zero_grad()
    image = image.clone().requires_grad_()
    with torch.autocast(image.device.type, dtype=dtype or torch.float16, enabled=dtype is not None):
        outputs = model(image)
    generator = torch.Generator(image.device).manual_seed(1)
    weights = [torch.randn(out.shape, generator=generator, device=image.device) for out in outputs]
    sum((out.float() * weight).sum() for out, weight in zip(outputs, weights)).backward()
    return Run([out.float() for out in outputs], image.grad,
               {name: param.grad.clone() for name, param in model.named_parameters()})


def relative_error(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return ((ours.float() - reference.float()).norm() / reference.float().norm()).item()


def assert_close_to_float32(low: Run, full: Run, output_tol: float, grad_tol: float) -> None:
    """Each output, the input gradient and each parameter gradient of a
    reduced-precision run within a relative (Frobenius) error of float32's.

    Parameters whose float32 gradient is below 1e-3 of the largest (biases
    before a BatchNorm, whose true gradient is zero, and the like) carry
    rounding noise only and are compared as part of all gradients together.
    """
    for index, (out, ref) in enumerate(zip(low.outputs, full.outputs)):
        assert torch.isfinite(out).all(), f'output {index} is not finite'
        assert relative_error(out, ref) < output_tol, f'output {index}: {relative_error(out, ref):.2e}'
    assert relative_error(low.input_grad, full.input_grad) < grad_tol
    largest = max(grad.norm() for grad in full.grads.values())
    for name, grad in low.grads.items():
        assert torch.isfinite(grad).all(), f'{name}: gradient not finite'
        if full.grads[name].norm() > 1e-3 * largest:
            error = relative_error(grad, full.grads[name])
            assert error < grad_tol, f'{name}: gradient off by {error:.2e}'
    flat_low, flat_full = (torch.cat([run.grads[name].flatten() for name in full.grads]) for run in (low, full))
    assert relative_error(flat_low, flat_full) < grad_tol

#: Relative errors allowed under autocast, in unit roundoffs of its dtype:
#: (outputs, gradients). 8 for outputs, 16 for gradients (two passes of
#: rounding), except ResT's gradients: its instance norm rescales each
#: head's near-uniform attention to unit variance, so the rounding of the
#: scores (an ulp of ~1e-3 in float16 on deviations of ~1e-2) is magnified
#: in the attention's gradients (measured in float16: 5e-2 on stage 4's
#: projections).
ROUNDOFFS_ALLOWED = {'rmt-fast': (8, 16), 'rmt-reference': (8, 16), 'rest': (8, 256), 'resmlp': (8, 16)}


def tolerances(name: str, dtype: torch.dtype) -> tuple:
    """(output, gradient) relative errors allowed to backbone ``name`` under ``dtype`` autocast."""
    return tuple(min(count * UNIT_ROUNDOFF[dtype], 0.25) for count in ROUNDOFFS_ALLOWED[name])

#: Marks of a test that needs a GPU: ``pytest -m cuda`` selects them
#: (tools/misc/gpu_check.sh); without CUDA they are skipped.
NEEDS_CUDA = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')]
