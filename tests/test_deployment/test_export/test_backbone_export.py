"""Every backbone exports with both exporters as one dynamic graph that
onnxruntime runs at any size with torch's outputs: against the float64 forward, within
LAMBDA times torch's own float32 error (helpers/runtime_bounds.py)."""
import pytest
import torch
from mmdet.registry import MODELS

from mmrmt.deployment.export import TensorModeModel, export_onnx
from mmrmt.deployment.runtime import verification_inputs
from mmrmt.models import ResMLP, ResT
from helpers.runtime_bounds import assert_runtime_within_format

TRACED_SIZE = (64, 96)
#: The traced size, a larger one, one that is not a multiple of 32, and one whose ResMLP grid (16x18)
#: exceeds its 14x14 token window, so that the windows shift there (they do not at the traced size).
SIZES = (TRACED_SIZE, (128, 160), (75, 109), (256, 288))
#: RMT-T's widths and stage kinds (decomposed MaSA in stages 1-2, full in 3-4)
#: with one block a stage, and layer scales in stages 3-4 as RMT-B/L have them:
#: every export path of the zoo's archs, in a graph the dynamo exporter traces
#: in a quarter of RMT-T's time.
RMT_ONE_BLOCK_A_STAGE = dict(
    embed_dims=[64, 128, 256, 512], depths=[1, 1, 1, 1], num_heads=[4, 4, 8, 16], mlp_ratios=[3, 3, 3, 3],
    init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6], decomposed=[True, True, False, False],
    layer_scales=[False, False, True, True])
#: ResT-Lite with one block a stage: its widths, heads and key/value grid reductions.
REST_ONE_BLOCK_A_STAGE = dict(ResT.arch_zoo['lite'], depths=[1, 1, 1, 1])
#: ResMLP-12's blocks, four of them, each feeding one level (the export's cost is per block traced).
RESMLP_FOUR_BLOCKS = dict(ResMLP.arch_zoo['12'], depth=4)
BACKBONES = {
    'rmt-fast': dict(type='RMT', arch=RMT_ONE_BLOCK_A_STAGE, impl='fast'),
    'rmt-reference': dict(type='RMT', arch=RMT_ONE_BLOCK_A_STAGE, impl='reference'),
    'rest-lite-1': dict(type='ResT', arch=REST_ONE_BLOCK_A_STAGE),
    'resmlp-12-4': dict(type='ResMLP', arch=RESMLP_FOUR_BLOCKS),
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
    inputs = verification_inputs(model, SIZES, batch=2)
    assert len(inputs) == 2 * len(SIZES)
    assert_runtime_within_format(model, str(path), inputs)
