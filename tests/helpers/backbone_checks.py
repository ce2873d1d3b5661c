"""Checks every backbone's tests run the same way."""
from typing import Callable, List

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from .rounding import assert_close, two_implementations


def assert_with_cp_matches_plain(build: Callable[..., nn.Module], image: torch.Tensor) -> None:
    """``build(with_cp=True)`` gives the outputs and gradients of ``build(with_cp=False)``.

    Both models hold the same weights and run in train mode; the loss weighs
    every output element differently so that no gradient can hide.
    """
    torch.manual_seed(0)
    plain = build(with_cp=False)
    checkpointed = build(with_cp=True)
    checkpointed.load_state_dict(plain.state_dict())
    results = []
    for model in (plain, checkpointed):
        model.train()
        outputs = model(image)
        sum((o * torch.linspace(0, 1, o.numel()).view_as(o)).sum() for o in outputs).backward()
        results.append((outputs, {n: p.grad.clone() for n, p in model.named_parameters()}))
    (out_a, grad_a), (out_b, grad_b) = results
    # The checkpointed forward recomputes the same kernels on the same tensors: equal but for
    # the order a multi-threaded reduction sums in, worst over the largest reduction (every
    # position of the first map, for a stem parameter's gradient) and the network's depth.
    terms, depth = image.numel() // image.shape[1], sum(1 for m in plain.modules() if not list(m.children()))
    tolerance = two_implementations(torch.float32, terms, depth)
    for a, b in zip(out_a, out_b):
        assert_close(a, b, tolerance)
    assert grad_a.keys() == grad_b.keys()
    largest = max(grad.abs().max().item() for grad in grad_a.values())
    for name in grad_a:  # relative to the largest gradient: a bias before a BatchNorm has none
        assert_close(grad_a[name], grad_b[name], tolerance, largest, msg=name)


def batch_norms(module: nn.Module) -> List[_BatchNorm]:
    """Every BatchNorm layer inside ``module``."""
    return [m for m in module.modules() if isinstance(m, _BatchNorm)]


def assert_norm_eval_keeps_batch_norms_in_eval(build: Callable[..., nn.Module]) -> None:
    """In train mode, ``norm_eval=True`` keeps every BN in eval, still learning; False does not."""
    model = build(norm_eval=True).train()
    assert model.training and batch_norms(model)
    assert all(not bn.training for bn in batch_norms(model))
    assert all(p.requires_grad for p in model.parameters())
    assert all(bn.training for bn in batch_norms(build(norm_eval=False).train()))
