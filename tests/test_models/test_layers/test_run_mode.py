"""The run mode's answers in every run of the matrix its docstring writes, read from that docstring."""
from typing import Callable, Dict, List, Optional

import pytest
import torch

from mmrmt.models.layers import run_mode
from helpers.graph_runs import (Recorder, compiled, eager, jit_trace, onnx_dynamo, onnx_torchscript, recorded,
                                torch_export)

QUESTIONS = ('records_graph', 'compiles', 'keeps_autograd', 'chunks_cpu_inference')


def documented_matrix() -> Dict[str, Dict[str, str]]:
    """``{run: {question: cell}}`` of the table in ``run_mode``'s docstring."""
    lines = run_mode.__doc__.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith('===')]
    assert len(rules) == 3, 'the docstring has one table'
    spans, start = [], 0
    for piece in lines[rules[0]].split('  '):
        if piece:
            start = lines[rules[0]].index(piece, start)
            spans.append((start, start + len(piece)))
            start += len(piece)
    spans[-1] = (spans[-1][0], None)

    def cells(line: str) -> List[str]:
        return [line[begin:end].strip() for begin, end in spans]

    assert cells(lines[rules[0] + 1]) == ['Run', *QUESTIONS]
    return {row[0]: dict(zip(QUESTIONS, row[1:])) for row in map(cells, lines[rules[1] + 1:rules[2]])}


def questions(x: torch.Tensor, training: bool) -> dict:
    """The run mode's answers in a forward on ``x`` of a module in train mode if ``training``."""
    return dict(records_graph=run_mode.records_graph(), compiles=run_mode.compiles(),
                keeps_autograd=run_mode.keeps_autograd(),
                chunks_cpu_inference=run_mode.chunks_cpu_inference(x, training),
                autocast_dtype=run_mode.autocast_dtype(x))


def off_the_cpu() -> str:
    """A device other than the CPU: CUDA where there is one, else 'meta' (the answers only ask 'the CPU?')."""
    return 'cuda' if torch.cuda.is_available() else 'meta'


class Run:
    """How the test runs one row of the matrix.

    Args:
        how (callable): Runs the model on an input in the row's way.
        training (bool): The model's mode.
        grads (tuple[bool]): The caller's grad modes to run it under (a
            row whose cells say 'caller': both).
        device (str): Where the model and input are.
        inference_mode (bool): Run under ``torch.inference_mode()`` as
            well as under ``torch.no_grad()`` where without grad.
    """

    def __init__(self, how: Callable, training: bool, grads: tuple, device: str = 'cpu',
                 inference_mode: bool = False) -> None:
        self.how, self.training, self.grads, self.device, self.inference_mode = (
            how, training, grads, device, inference_mode)


RUNS = {
    'training': [Run(eager, True, (True, ))],
    'eval, grad': [Run(eager, False, (True, ))],
    'train mode, no grad': [Run(eager, True, (False, ))],
    'eval, no grad, CPU': [Run(eager, False, (False, ), inference_mode=True)],
    'eval, no grad, GPU': [Run(eager, False, (False, ), off_the_cpu(), inference_mode=True)],
    'torch.jit.trace': [Run(jit_trace, False, (True, False))],
    'ONNX, TorchScript': [Run(onnx_torchscript, False, (True, False))],
    'ONNX dynamo, torch.export': [Run(torch_export, False, (True, False))],
    'torch.compile': [Run(compiled, False, (True, False))],
}


def answers_of(run: Run, grad: bool, inference_mode: bool, autocast: Optional[torch.dtype]) -> dict:
    model = Recorder(questions).to(run.device).train(run.training)
    mode = torch.inference_mode() if inference_mode else torch.set_grad_enabled(grad)
    with mode, torch.autocast(autocast_device(run.device), dtype=autocast or torch.bfloat16,
                              enabled=autocast is not None):
        return recorded(run.how, model, torch.randn(2, 3, device=run.device))


def autocast_device(device: str) -> str:
    """Where the test turns autocast on: the CPU's for 'meta' tensors (autocast has no 'meta')."""
    return 'cpu' if device == 'meta' else torch.device(device).type


def expected(cell: str, grad: bool, eager_answer: bool) -> bool:
    if cell == 'caller':
        return grad
    if cell == 'as eager':
        return eager_answer
    assert cell == 'yes' or cell.startswith('-'), f'unknown cell {cell!r}'
    return cell == 'yes'


def test_the_table_has_a_run_for_every_row_and_every_row_a_cell_for_every_question():
    matrix = documented_matrix()
    assert list(matrix) == list(RUNS)
    assert all(len(cells) == len(QUESTIONS) and all(cells.values()) for cells in matrix.values())


def check_row(row: str, runs: List[Run], autocast: Optional[torch.dtype]) -> None:
    """Each run of ``row`` (under both grad modes where the table says 'caller') answers as the table says;
    autocast changes no answer but :func:`run_mode.autocast_dtype`."""
    cells = documented_matrix()[row]
    for run in runs:
        for grad in run.grads:
            for inference_mode in (False, True) if run.inference_mode and not grad else (False, ):
                answers = answers_of(run, grad, inference_mode, autocast)
                eager_answers = answers_of(Run(eager, run.training, (grad, ), run.device), grad, inference_mode,
                                           autocast)
                where = f'{row} via {run.how.__name__}, grad={grad}, inference_mode={inference_mode}'
                for question in QUESTIONS:
                    assert answers[question] == expected(cells[question], grad, eager_answers[question]), \
                        f'{where}: {question}'
                on = autocast is not None and run.device != 'meta'  # the CPU's autocast leaves 'meta' alone
                assert answers['autocast_dtype'] == (torch.get_autocast_dtype(autocast_device(run.device))
                                                     if on else None), where


@pytest.mark.parametrize('autocast', [None, torch.bfloat16], ids=['float32', 'autocast'])
@pytest.mark.parametrize('row', list(RUNS))
def test_every_cell_of_the_matrix(row, autocast):
    check_row(row, RUNS[row], autocast)


@pytest.mark.slow
def test_the_dynamo_onnx_exporter_answers_as_torch_export():
    """The dynamo exporter's row, through its ONNX translation (tens of seconds, even of a one-op model)."""
    check_row('ONNX dynamo, torch.export', [Run(onnx_dynamo, False, (True, False))], None)


def test_autocast_dtype_is_the_autocast_dtype_of_the_tensors_device():
    x = torch.randn(2)
    assert run_mode.autocast_dtype(x) is None
    with torch.autocast('cpu', dtype=torch.bfloat16):
        assert run_mode.autocast_dtype(x) == torch.bfloat16
        assert run_mode.autocast_dtype(torch.empty(2, device='meta')) is None  # autocast of the CPU only


@pytest.mark.parametrize('bytes_per_image,images', [(1, run_mode.INFERENCE_CHUNK_BYTES),
                                                    (run_mode.INFERENCE_CHUNK_BYTES // 3, 3),
                                                    (run_mode.INFERENCE_CHUNK_BYTES, 1),
                                                    (10 * run_mode.INFERENCE_CHUNK_BYTES, 1)])
def test_a_chunk_holds_as_many_images_as_fit_the_budget_and_at_least_one(bytes_per_image, images):
    assert run_mode.inference_chunk_images(bytes_per_image) == images


class ExportTold(torch.nn.Module):
    """Adds 1 where :func:`run_mode.torch_exports` answers True, subtracts 1 elsewhere: the answer a
    graph was traced with stays in it (the recorder of the matrix above records nothing in a strict
    export, which does not replay a forward's side effects)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1 if run_mode.torch_exports() else x - 1


@pytest.mark.parametrize('strict', [False, True], ids=['non-strict', 'strict'])
def test_torch_export_is_told_apart_from_torch_compile(strict):
    """Strict (dynamo) and non-strict exports answer True, a compiled forward False: torch before 2.14
    answers ``torch.compiler.is_exporting()`` True in both (pytorch/pytorch#176347)."""
    model, x = ExportTold(), torch.zeros(1)
    torch._dynamo.reset()
    try:
        assert torch.compile(model, backend='eager')(x).item() == -1
    finally:
        torch._dynamo.reset()
    assert torch.export.export(model, (x, ), strict=strict).module()(x).item() == 1
    assert model(x).item() == -1


def test_autocast_dtype_compiles_into_one_graph():
    """dynamo traces :func:`run_mode.autocast_dtype` without a graph break (that of torch 2.7 cannot
    trace ``torch.amp.is_autocast_available``), answering as eager does inside and outside autocast."""
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x + (1 if run_mode.autocast_dtype(x) is None else 2)

    torch._dynamo.reset()
    try:
        compiled_forward = torch.compile(forward, backend='eager', fullgraph=True)
        assert compiled_forward(torch.zeros(1)).item() == 1
        with torch.autocast('cpu', dtype=torch.bfloat16):
            assert compiled_forward(torch.zeros(1)).item() == 2
    finally:
        torch._dynamo.reset()
