"""Every backbone exports with both exporters as one dynamic graph that
onnxruntime runs at any size with torch's outputs: against the float64 forward, within
LAMBDA times torch's own float32 error (helpers/runtime_bounds.py)."""
import pytest
import torch
from mmdet.registry import MODELS

from mmrmt.deployment.export import (DYNAMO_ANY_SIZE_FROM, DynamicExportError, TensorModeModel, check_dynamo_any_size,
                                     export_onnx)
from mmrmt.deployment.export.onnx_export import check_inputs_stay_dynamic
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


def exports_at_any_size(backbone: str, exporter: str) -> bool:
    """Whether export_onnx writes ``backbone`` with ``exporter`` as a dynamic graph on the running torch
    (the dynamo exporter of an older torch is refused for some backbones: test_old_torch_refuses_...)."""
    oldest = DYNAMO_ANY_SIZE_FROM.get(MODELS.get(BACKBONES[backbone]['type']), (0, 0))
    return exporter == 'torchscript' or torch.__version__ >= oldest


@pytest.fixture(scope='module', params=[(backbone, exporter) for backbone in BACKBONES
                                        for exporter in ('torchscript', 'dynamo')
                                        if exports_at_any_size(backbone, exporter)],
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


def test_old_torch_refuses_a_dynamic_dynamo_export_of_resmlp_and_writes_nothing(tmp_path, monkeypatch):
    """torch 2.7-2.9's dynamo exporter writes a ResMLP graph that holds at the traced sizes only (2.7: multiples
    of 32, 2.8: up to 224 pixels) or raises (2.9): export_onnx refuses it there in one line, before writing."""
    model = TensorModeModel(MODELS.build(BACKBONES['resmlp-12-4']).eval())
    rmt = TensorModeModel(MODELS.build(BACKBONES['rmt-fast']).eval())
    for version in ('2.7.1', '2.8.0', '2.9.1+cpu'):
        with pytest.raises(DynamicExportError) as refused:
            check_dynamo_any_size(model, version)
        assert str(refused.value) == (
            f"torch {version}'s dynamo exporter writes a ResMLP graph that holds at the traced sizes only: export it "
            'with --exporter torchscript, or at a fixed size, or with torch 2.10 or later')
        check_dynamo_any_size(rmt, version)  # RMT's and ResT's dynamo graphs hold at any size from the floor on
    for version in ('2.10.0', '2.14.1+cu130'):
        check_dynamo_any_size(model, version)
    monkeypatch.setattr(torch, '__version__', '2.8.0')
    inputs = model.example_inputs(*TRACED_SIZE, batch=2)
    with pytest.raises(DynamicExportError):
        export_onnx(model, inputs, str(tmp_path / 'resmlp.onnx'), 'dynamo', dynamic=True)
    assert list(tmp_path.iterdir()) == []
    export_onnx(model, inputs, str(tmp_path / 'resmlp.onnx'), 'torchscript', dynamic=True)  # the way offered
    assert (tmp_path / 'resmlp.onnx').stat().st_size > 0


def test_a_graph_whose_inputs_the_exporter_fixed_is_refused(tmp_path):
    """torch 2.7's dynamo exporter pins a whole UperNet's or Mask R-CNN's input to the traced size; the
    check after a dynamic dynamo export names the fixed dimensions (here a fixed-size file stands in)."""
    model = TensorModeModel(MODELS.build(BACKBONES['rmt-fast']).eval())
    inputs = model.example_inputs(*TRACED_SIZE, batch=2)
    export_onnx(model, inputs, str(tmp_path / 'fixed.onnx'), 'torchscript', dynamic=False)
    with pytest.raises(DynamicExportError) as refused:
        check_inputs_stay_dynamic(str(tmp_path / 'fixed.onnx'), model)
    assert str(refused.value) == (
        f"torch {torch.__version__}'s dynamo exporter fixed the graph's image height 64, image width 96, image "
        'batch 2 (the traced sizes): export it with --exporter torchscript, or at a fixed size')
    export_onnx(model, inputs, str(tmp_path / 'dynamic.onnx'), 'torchscript', dynamic=True)
    check_inputs_stay_dynamic(str(tmp_path / 'dynamic.onnx'), model)
