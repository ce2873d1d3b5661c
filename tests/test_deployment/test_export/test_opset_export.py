"""Every backbone exports at the opsets deployment toolchains use (mmdeploy's default 11, 13, 14,
and our default 17) as a dynamic TorchScript-exported graph of exactly that opset, which onnxruntime
runs at any size with torch's outputs."""
import onnx
import pytest
import torch
from mmdet.registry import MODELS

from mmrmt.deployment.export import TensorModeModel, export_onnx
from mmrmt.deployment.runtime import verification_inputs
from helpers.runtime_bounds import assert_runtime_within_format

OPSETS = (11, 13, 14, 17)
#: The traced size and one that is not a multiple of 32.
SIZES = ((64, 96), (75, 109))
#: Tiny archs with every export path of the zoo's: RMT's decomposed and full MaSA and layer
#: scales, ResT's one-head and mixed-head attention and key reduction, ResMLP's blocks.
TINY_BACKBONES = {
    'rmt': dict(type='RMT', impl='fast', arch=dict(
        embed_dims=[16, 32, 64, 64], depths=[1, 1, 1, 1], num_heads=[2, 2, 4, 4], mlp_ratios=[2, 2, 2, 2],
        init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6], decomposed=[True, True, False, False],
        layer_scales=[False, False, True, True])),
    'rest': dict(type='ResT', arch=dict(embed_dims=[16, 32, 64, 64], depths=[1, 1, 1, 1], num_heads=[1, 2, 4, 4],
                                        mlp_ratios=[2, 2, 2, 2], sr_ratios=[8, 4, 2, 1])),
    'resmlp': dict(type='ResMLP', arch=dict(embed_dims=32, depth=4, patch_size=16)),
}


@pytest.mark.parametrize('opset', OPSETS)
@pytest.mark.parametrize('backbone', sorted(TINY_BACKBONES))
def test_backbone_exports_at_the_opset_and_matches_torch(backbone, opset, tmp_path):
    torch.manual_seed(0)
    network = MODELS.build(TINY_BACKBONES[backbone])
    network.init_weights()
    model = TensorModeModel(network.eval())
    path = tmp_path / f'{backbone}.onnx'
    export_onnx(model, model.example_inputs(*SIZES[0], batch=2), str(path), 'torchscript', opset, dynamic=True)
    graph = onnx.load(str(path))
    assert [entry.version for entry in graph.opset_import if entry.domain in ('', 'ai.onnx')] == [opset]
    onnx.checker.check_model(graph)
    # float32 in onnxruntime against the float64 forward: within LAMBDA times torch's own float32 error
    # (or LAMBDA sqrt(n) u, n the longest sum), as helpers/runtime_bounds.py derives it
    assert_runtime_within_format(model, str(path), verification_inputs(model, SIZES, batch=2))
