"""Every backbone exports at the opsets deployment toolchains use (mmdeploy's default 11, 13, 14,
and our default 17) as a dynamic TorchScript-exported graph of exactly that opset, which onnxruntime
runs at any size with torch's outputs."""
import onnx
import pytest
import torch
from mmdet.registry import MODELS

from mmrmt.deployment import TensorModeModel, compare_with_onnxruntime, export_onnx, verification_inputs

#: float32 rounds each op to 2^-24 of its result; the graphs' longest reductions (convolutions and
#: projections) sum ~10^3 terms, whose rounding grows as sqrt(n) 2^-24 ~ 2e-6 in practice (n 2^-24
#: ~ 6e-5 at worst), and onnxruntime orders the sums differently from torch: 1e-4 of the largest
#: value bounds the worst case with room, and stays far below any wrong op (>= 1e-2).
TOLERANCE = 1e-4
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
    differences = compare_with_onnxruntime(model, str(path), verification_inputs(model, SIZES, batch=2))
    assert max(differences.values()) < TOLERANCE, differences
