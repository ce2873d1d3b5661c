"""The ways a module's forward is run: eagerly, traced, exported (either ONNX exporter, ``torch.export``) and
compiled, each a function of (model, input); and a module recording what it is asked in each forward."""
import io
import warnings
from typing import Callable, List

import torch
from torch import nn

#: The answers of every Recorder forward, in order (a module-level list: torch.export runs a copy of the model).
ANSWERS: List[dict] = []


class Recorder(nn.Module):
    """Records ``questions(x, self.training)`` in :data:`ANSWERS` in each forward it runs.

    Args:
        questions (callable): The answers of the forward being run, a dict.
    """

    def __init__(self, questions: Callable[[torch.Tensor, bool], dict]) -> None:
        super().__init__()
        self.questions = questions
        self.weight = nn.Parameter(torch.ones(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ANSWERS.append(self.questions(x, self.training))
        return x * self.weight


def eager(model: nn.Module, x: torch.Tensor) -> None:
    model(x)


def jit_trace(model: nn.Module, x: torch.Tensor) -> None:
    torch.jit.trace(model, x, check_trace=False)


def onnx_torchscript(model: nn.Module, x: torch.Tensor) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(model, (x, ), io.BytesIO(), dynamo=False)


def onnx_dynamo(model: nn.Module, x: torch.Tensor) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(model, (x, ), dynamo=True, verbose=False)


def torch_export(model: nn.Module, x: torch.Tensor) -> None:
    torch.export.export(model, (x, ))


def compiled(model: nn.Module, x: torch.Tensor) -> None:
    torch._dynamo.reset()
    try:
        torch.compile(model, backend='eager')(x)  # dynamo's tracing, no code generation
    finally:
        torch._dynamo.reset()


def recorded(how: Callable, model: Recorder, x: torch.Tensor) -> dict:
    """What ``model`` is told when ``how`` runs it on ``x`` (the same in each of its forwards)."""
    ANSWERS.clear()
    how(model, x)
    assert len(ANSWERS) >= 1
    assert all(answers == ANSWERS[0] for answers in ANSWERS)
    return ANSWERS[0]
