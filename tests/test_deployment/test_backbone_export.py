"""Every backbone exports with both exporters as one dynamic graph that
onnxruntime runs at any size with torch's outputs (float32, 1e-4 x max|value|)."""
import pytest
import torch
from mmdet.registry import MODELS

from mmrmt.deployment import TensorModeModel, compare_with_onnxruntime, export_onnx, verification_inputs

TOLERANCE = 1e-4
TRACED_SIZE = (64, 96)
#: The traced size, a larger one and one that is not a multiple of 32.
SIZES = (TRACED_SIZE, (128, 160), (75, 109))
BACKBONES = {
    'rmt-t-fast': dict(type='RMT', arch='t', impl='fast'),
    'rmt-t-reference': dict(type='RMT', arch='t', impl='reference'),
    'rest-lite': dict(type='ResT', arch='lite'),
    'resmlp-12': dict(type='ResMLP', arch='12'),
}


@pytest.fixture(scope='module', params=[(backbone, exporter) for backbone in BACKBONES
                                        for exporter in ('torchscript', 'dynamo')],
                ids=lambda param: '-'.join(param))
def exported(request, tmp_path_factory):
    """A backbone with initialised weights and its dynamic ONNX file."""
    backbone, exporter = request.param
    torch.manual_seed(0)
    network = MODELS.build(BACKBONES[backbone])
    network.init_weights()
    model = TensorModeModel(network.eval())
    path = tmp_path_factory.mktemp('onnx') / f'{backbone}.onnx'
    export_onnx(model, model.example_inputs(*TRACED_SIZE, batch=2), str(path), exporter, dynamic=True)
    return model, path


def test_onnxruntime_matches_torch_at_any_size(exported):
    model, path = exported
    differences = compare_with_onnxruntime(model, str(path), verification_inputs(model, SIZES, batch=2))
    assert len(differences) == 2 * len(SIZES)
    assert max(differences.values()) < TOLERANCE, differences
