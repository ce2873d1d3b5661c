"""Whole models (detectors and segmentors of the RMT-T zoo and the tiny test configs) export in tensor mode
(no decoding, no NMS) with both exporters, at mmdeploy's opset and, for Cascade R-CNN, at a fixed size, and
run in onnxruntime with torch's outputs within --verify's threshold: the library calls of
tools/deployment/pytorch2onnx.py (whose end-to-end runs are tests/tools/test_pytorch2onnx.py's), in this
process, each export once."""
from pathlib import Path
from typing import Dict, Optional, Tuple

import onnx
import pytest
import torch

from mmrmt.deployment.export import TensorModeModel, check_opset, exact_roi_min_side, export_onnx
from mmrmt.deployment.runtime import compare_with_runtime, verification_inputs
from mmrmt.models import RMT
from mmrmt.utils import build_seeded_model, read_config
from helpers.tiny_configs import DET_CONFIG, SEG_CONFIG, TEST_CONFIGS
from helpers.tool_modules import import_tool

pytorch2onnx = import_tool('tools/deployment/pytorch2onnx.py')

#: --verify's own threshold (the tool's --help says why it is 1e-4; the graphs' bounds derived from float64
#: are helpers/runtime_bounds.py's)
VERIFY_TOLERANCE = pytorch2onnx.DEFAULT_TOLERANCE['f32']
SHAPE = (64, 96)
ZOO_CONFIGS = Path(__file__).resolve().parents[3] / 'configs' / 'rmt'
#: A zoo config's RMT-T (2, 2, 8, 2 blocks) with one block a stage: RMT-T's widths, heads and stage kinds
#: (decomposed MaSA in stages 1-2, full in 3-4), so the zoo model's neck, heads and graph interface around
#: every kind of RMT-T stage, exported and verified in about a third of the time.
ONE_BLOCK_RMT_T = dict(RMT.arch_zoo['t'], depths=[1, 1, 1, 1])


def export_and_compare(config: Path, path: Path, dynamic: bool, exporter: str = 'torchscript',
                       opset: Optional[int] = None, one_block: bool = False
                       ) -> Tuple[TensorModeModel, float, Dict[str, float]]:
    """Export ``config``'s seeded model (pytorch2onnx.py's, no weights) traced at :data:`SHAPE` to ``path``
    and compare it with torch in onnxruntime as --verify does; return the model, the shortest RoI side the
    graph pools exactly and the differences by input."""
    cfg = read_config(str(config))
    if one_block:
        cfg.model.backbone.arch = ONE_BLOCK_RMT_T
    cfg.model.backbone.pop('init_cfg', None)
    model = TensorModeModel(build_seeded_model(cfg))
    batch = 2 if dynamic and model.batch_is_dynamic else 1
    opset = check_opset(exporter, opset)
    export_onnx(model, model.example_inputs(*SHAPE, batch, torch.Generator().manual_seed(0)), str(path), exporter,
                opset, dynamic)
    exact_side = exact_roi_min_side(model.model, opset)
    inputs = verification_inputs(model, pytorch2onnx.verification_sizes(SHAPE, dynamic), batch,
                                 min_proposal_side=max(1.0, exact_side))
    return model, exact_side, compare_with_runtime(model, str(path), inputs)


def assert_verified_at_three_sizes(differences: Dict[str, float]) -> None:
    """Random and demo images at the traced size, a larger one and an odd one agree within the threshold."""
    assert set(differences) == {f'{kind} {size}' for kind in ('random', 'demo picture')
                                for size in ('64x96', '128x128', '77x123')}
    assert max(differences.values()) <= VERIFY_TOLERANCE, differences


def assert_verified_at_the_traced_size(differences: Dict[str, float]) -> None:
    assert set(differences) == {'random 64x96', 'demo picture 64x96'}
    assert max(differences.values()) <= VERIFY_TOLERANCE, differences


def opsets(path: Path) -> list:
    model = onnx.load(str(path), load_external_data=False)
    return [entry.version for entry in model.opset_import if entry.domain in ('', 'ai.onnx')]


@pytest.mark.parametrize('config', [DET_CONFIG, SEG_CONFIG], ids=['mask-rcnn', 'upernet'])
def test_dynamo_exporter_exports_whole_models(config, tmp_path):
    """Two-stage detectors and segmentors also export with the dynamo exporter (tiny RMTs)."""
    assert_verified_at_three_sizes(export_and_compare(config, tmp_path / 'model.onnx', True, 'dynamo')[2])


@pytest.mark.parametrize('config,inputs,outputs', [
    ('retinanet_rmt-t_fpn_1x_coco.py', ['image'],
     [f'head_{i}_{level}' for i in (0, 1) for level in range(5)]),
    ('mask-rcnn_rmt-t_fpn_1x_coco.py', ['image', 'proposals'],
     [f'rpn_{i}_{level}' for i in (0, 1) for level in range(5)] + ['roi_0', 'roi_1', 'roi_2']),
    ('upernet_rmt-t_8xb2-160k_ade20k-512x512.py', ['image'], ['seg_logits']),
])
def test_tensor_mode_export_agrees_in_onnxruntime(config, inputs, outputs, tmp_path):
    out = tmp_path / 'model.onnx'
    model, _, differences = export_and_compare(ZOO_CONFIGS / config, out, True, one_block=True)
    assert model.input_names == inputs
    assert_verified_at_three_sizes(differences)
    graph = onnx.load(str(out), load_external_data=False).graph
    assert [value.name for value in graph.input] == inputs
    assert [value.name for value in graph.output] == outputs
    assert not {node.op_type for node in graph.node} & {'NonMaxSuppression', 'TopK'}


@pytest.mark.parametrize('config,one_block', [(ZOO_CONFIGS / 'retinanet_rmt-t_fpn_1x_coco.py', True),
                                              (SEG_CONFIG, False)], ids=['retinanet-rmt-t', 'upernet'])
def test_whole_models_export_at_mmdeploys_opset(config, one_block, tmp_path):
    """mmdeploy's default opset 11 (every opset below 16 takes the same export forms): graphs of that opset,
    verified in onnxruntime (fixed 64x96), with every RoI pooled exactly (they have none). The two-stage
    detector at opset 11: tests/tools/test_pytorch2onnx.py, where the tool says its exact RoI side."""
    out = tmp_path / 'model.onnx'
    _, exact_side, differences = export_and_compare(config, out, False, opset=11, one_block=one_block)
    assert_verified_at_the_traced_size(differences)
    assert exact_side == 0
    assert opsets(out) == [11]


def test_cascade_exports_at_a_fixed_size(tmp_path):
    """(At a fixed size only: --dynamic is one line, test_bad_inputs_probe.py.)"""
    config = TEST_CONFIGS / 'cascade-mask-rcnn_rmt-tiny_fpn_test.py'
    model, _, differences = export_and_compare(config, tmp_path / 'cascade.onnx', False)
    assert not model.size_is_dynamic
    assert_verified_at_the_traced_size(differences)
