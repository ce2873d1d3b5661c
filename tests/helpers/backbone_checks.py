"""Checks every backbone's tests run the same way."""
from typing import Callable, List

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm


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
    for a, b in zip(out_a, out_b):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6)
    assert grad_a.keys() == grad_b.keys()
    for name in grad_a:
        torch.testing.assert_close(grad_a[name], grad_b[name], rtol=1e-5, atol=1e-6, msg=name)


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
