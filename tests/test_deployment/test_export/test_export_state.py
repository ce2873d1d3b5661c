"""What the export forms ask beyond the eager run mode: whether an export records the forward, and whether
it writes a graph of fixed shapes (inside fixed_shape_export only)."""
import pytest
import torch

from mmrmt.deployment.export import exports_fixed_shapes, fixed_shape_export, is_exporting
from helpers.graph_runs import Recorder, compiled, eager, jit_trace, onnx_torchscript, recorded, torch_export

#: Each way of running a forward, and whether it exports.
RUNS = {'eager': (eager, False), 'torch.jit.trace': (jit_trace, False), 'ONNX, TorchScript': (onnx_torchscript, True),
        'torch.export': (torch_export, True), 'torch.compile': (compiled, False)}


def questions(x: torch.Tensor, training: bool) -> dict:
    return dict(is_exporting=is_exporting(), exports_fixed_shapes=exports_fixed_shapes())


def answers(row: str) -> dict:
    return recorded(RUNS[row][0], Recorder(questions).eval(), torch.randn(2, 3))


@pytest.mark.parametrize('row', list(RUNS))
def test_exports_of_fixed_shapes_are_the_exports_inside_their_context(row):
    outside = answers(row)
    with fixed_shape_export():
        inside = answers(row)
        with fixed_shape_export():
            nested = answers(row)
        assert answers(row) == inside, 'a nested context ended the outer one'
    after = answers(row)
    exports = RUNS[row][1]
    assert outside == after == dict(is_exporting=exports, exports_fixed_shapes=False)
    assert inside == nested == dict(is_exporting=exports, exports_fixed_shapes=exports)
