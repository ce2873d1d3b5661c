"""mmrmt.deployment.runtime.graph_predictor and int8.quantize: a graph in onnxruntime or OpenVINO predicts what the
torch model predicts through mmdet's / mmseg's own decoding (tiny RMT configs, demo pictures); the int8
graph keeps attention in float and stays close to the float one in either runtime."""
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

import onnx
import pytest
import torch
from mmengine.config import Config
from mmengine.dataset import pseudo_collate
from mmengine.registry import DATASETS

from mmrmt.deployment.export import TensorModeModel, export_onnx
from mmrmt.deployment.int8 import calibration_feeds, preprocessed_images, quantize_graph
from mmrmt.deployment.int8.quantize import ATTENTION_PRODUCT, PERMUTATION, is_permutation
from mmrmt.deployment.runtime import (RUNTIMES, GraphError, GraphPredictor, onnxruntime_session, open_graph,
                                      relative_difference)
from mmrmt.utils.model_from_config import build_cpu_model
from helpers.openvino_refusal import refused_in_process
from helpers.quantization_bounds import INT16_MAX, int8_error_bound, largest_pair_sum, quantised_layers
from helpers.rounding import assert_close
from helpers.runtime_bounds import float32_pair_tolerance
from helpers.tool_modules import import_tool

tool_process = import_tool('tests/tools/tool_process.py')
DET_CONFIG, SEG_CONFIG, TEST_CONFIGS = tool_process.DET_CONFIG, tool_process.SEG_CONFIG, tool_process.TEST_CONFIGS
det_data_options, seg_data_options = tool_process.det_data_options, tool_process.seg_data_options


def config_on(path, options) -> Config:
    cfg = Config.fromfile(str(path))
    cfg.merge_from_dict(dict(option.split('=', 1) for option in options))
    return cfg


def exported(cfg: Config, path: Path, shape=(64, 64)):
    """The config's model with initialised weights, and its fixed-size tensor-mode graph at ``path``."""
    torch.manual_seed(0)
    cfg.model.backbone.pop('init_cfg', None)  # no pretrained checkpoint
    model = build_cpu_model(cfg)
    model.init_weights()
    model.eval()
    tensor_mode = TensorModeModel(model)
    export_onnx(tensor_mode, tensor_mode.example_inputs(*shape), str(path))
    return model


def first_samples(cfg: Config, count: int = 4) -> dict:
    dataset = DATASETS.build(cfg.test_dataloader.dataset)
    return pseudo_collate([dataset[index] for index in range(count)])


@dataclass
class Exported:
    """A config (on the demo data), its model with initialised weights and the model's 64x64 graph."""
    cfg: Config
    model: torch.nn.Module
    path: Path


@pytest.fixture(scope='module')
def det_graph(demo_root, tmp_path_factory) -> Exported:
    """The tiny Mask R-CNN and its graph, exported once for the tests of both runtimes and of int8."""
    cfg = config_on(DET_CONFIG, det_data_options(demo_root))
    # an untrained RPN scores every anchor alike: keep the boxes that score, so there is something to match
    # (the RoI head's threshold applies after the graph, in mmdet's decoding: the graph is the same without it)
    cfg.model.test_cfg.rcnn.score_thr = 0.0
    path = tmp_path_factory.mktemp('det_graph') / 'det.onnx'
    return Exported(cfg, exported(cfg, path), path)


@pytest.fixture(scope='module')
def seg_graph(demo_root, tmp_path_factory) -> Exported:
    """The tiny UperNet and its graph, exported once for the tests of both runtimes."""
    cfg = config_on(SEG_CONFIG, seg_data_options(demo_root))
    path = tmp_path_factory.mktemp('seg_graph') / 'seg.onnx'
    return Exported(cfg, exported(cfg, path), path)


@dataclass
class Int8Graph:
    """The detector's graph quantised on 4 demo images: its feeds, the nodes kept in float, its path."""
    feeds: list
    kept: dict
    path: Path


@pytest.fixture(scope='module')
def int8_graph(det_graph, tmp_path_factory) -> Int8Graph:
    """``det_graph`` quantised once, for the int8 tests of both runtimes."""
    folder = tmp_path_factory.mktemp('int8_graph')
    feeds = list(calibration_feeds(str(det_graph.path), det_graph.model,
                                   preprocessed_images(det_graph.cfg, det_graph.model, 4)))
    kept = quantize_graph(str(det_graph.path), str(folder / 'int8.onnx'), feeds, str(folder))
    return Int8Graph(feeds, kept, folder / 'int8.onnx')


def torch_and_graph_predictions(graph: Exported, runtime: str, count: int = 4) -> Optional[Tuple[list, list]]:
    """What torch and the graph in ``runtime`` predict on the first ``count`` test images; None where this
    machine refuses the runtime (in one line, :func:`refused_in_process` checks)."""
    data = first_samples(graph.cfg, count)
    if runtime == 'openvino' and refused_in_process(
            lambda: GraphPredictor(graph.model, str(graph.path), runtime=runtime)):
        return None
    with torch.no_grad():
        expected = graph.model.test_step(data)
    return expected, GraphPredictor(graph.model, str(graph.path), runtime=runtime).test_step(data)


@pytest.mark.parametrize('runtime', RUNTIMES)
def test_two_stage_graph_predicts_what_torch_predicts(runtime, det_graph):
    model = det_graph.model
    predictions = torch_and_graph_predictions(det_graph, runtime)
    if predictions is None:
        return
    expected, actual = predictions
    # the graph's outputs and torch's: two float32 runs of the model, within `tolerance` of their magnitude
    tolerance = float32_pair_tolerance(model)
    for sample, got in zip(expected, actual):
        want, got = sample.pred_instances, got.pred_instances
        assert len(want) == len(got) > 0
        # a box is its proposal moved and scaled by the deltas, twice (RPN, RoI head), in pixels of an image
        # of this side: a relative error of the deltas is one of the side
        side = max(sample.ori_shape)
        assert_close(got.bboxes, want.bboxes, 2 * tolerance, side)
        # softmax of the logits (1-Lipschitz) of an initialised RoI head (weights of std 0.01: |logit| < 1)
        assert_close(got.scores, want.scores, tolerance, 1.)
        assert torch.equal(got.labels, want.labels)
        # a mask pixel flips only where its logit lies within the logits' error of the threshold: for logits
        # spread over their range, a fraction `tolerance` of the pixels at most
        assert (got.masks != want.masks).float().mean() <= tolerance


@pytest.mark.parametrize('runtime', RUNTIMES)
def test_segmentor_graph_predicts_what_torch_predicts(runtime, seg_graph):
    model = seg_graph.model
    predictions = torch_and_graph_predictions(seg_graph, runtime, 2)
    if predictions is None:
        return
    expected, actual = predictions
    for want, got in zip(expected, actual):
        # two float32 runs of the model (helpers/runtime_bounds.py), relative to the logits' magnitude
        assert_close(got.seg_logits.data, want.seg_logits.data, float32_pair_tolerance(model))


def test_a_fixed_graph_of_another_size_is_one_clear_error(demo_root, tmp_path):
    cfg = config_on(SEG_CONFIG, seg_data_options(demo_root))
    model = exported(cfg, tmp_path / 'seg.onnx', shape=(96, 96))
    with pytest.raises(GraphError, match=r"input 'image' is 1x3x96x96, got 1x3x64x64 \(export it with "):
        GraphPredictor(model, str(tmp_path / 'seg.onnx')).test_step(first_samples(cfg, 1))


def test_cascade_graph_is_refused_in_one_line(tmp_path):
    cfg = Config.fromfile(str(TEST_CONFIGS / 'cascade-mask-rcnn_rmt-tiny_fpn_test.py'))
    model = exported(cfg, tmp_path / 'cascade.onnx')
    with pytest.raises(GraphError, match='CascadeRoIHead is not evaluated from a graph'):
        GraphPredictor(model, str(tmp_path / 'cascade.onnx'))


def test_permutation_matrices_are_recognised():
    swap = torch.eye(4)[[1, 0, 3, 2]].numpy()
    assert is_permutation(swap)
    assert not is_permutation(2 * swap)
    assert not is_permutation(torch.ones(4, 4).numpy())
    assert not is_permutation(torch.eye(4)[[1, 1, 3, 2]].numpy())
    assert not is_permutation(torch.eye(4)[:3].numpy())


def test_int8_keeps_attention_float_and_stays_close(det_graph, int8_graph):
    feeds, kept, int8 = int8_graph.feeds, int8_graph.kept, str(int8_graph.path)
    assert [sorted(feed) for feed in feeds] == [['image', 'proposals']] * 4
    # the tiny RMT's stages attend with q k^T and (.) v: four stages, one block each
    assert list(kept.values()).count(ATTENTION_PRODUCT) >= 8
    # the rotary's pair swaps of q and k in each block
    assert list(kept.values()).count(PERMUTATION) == 8
    graph = onnx.load(int8).graph
    assert sum(node.op_type == 'QuantizeLinear' for node in graph.node) > 20
    # int8 Gemms and MatMuls write float: no quantise / dequantise pair after them
    producers = {output: node.op_type for node in graph.node for output in node.output}
    assert not [node.name for node in graph.node
                if node.op_type == 'QuantizeLinear' and producers.get(node.input[0]) in ('Gemm', 'MatMul')]
    assert set(kept) <= {node.name for node in graph.node}
    # 7-bit weights: the integer sums are exact whatever the CPU's int8 kernels (VNNI or AVX2's 16-bit pairs)
    assert largest_pair_sum(quantised_layers(onnx.load(int8))) <= INT16_MAX
    # the int8 grid's rounding, from the graph's own steps, over its quantised layers (quantization_bounds.py)
    bound = int8_error_bound(int8, feeds)
    float_session, int8_session = onnxruntime_session(str(det_graph.path)), onnxruntime_session(int8)
    for feed in feeds:
        expected = [torch.from_numpy(array) for array in float_session.run(None, feed)]
        # the RPN's maps (the RoI head's outputs of an untrained model are near-constant)
        assert relative_difference(expected[:10], int8_session.run(None, feed)[:10]) <= bound


def test_openvino_runs_the_int8_graph_in_int8_close_to_float(det_graph, int8_graph):
    if refused_in_process(lambda: open_graph(str(int8_graph.path), 'openvino')):
        return
    feeds = int8_graph.feeds
    bound = int8_error_bound(str(int8_graph.path), feeds)
    float_session, int8_session = (open_graph(str(path), 'openvino') for path in (det_graph.path, int8_graph.path))
    int8_runtime_precisions = {op.get_rt_info()['runtimePrecision'].astype(str)
                               for op in int8_session.session.compiled.get_runtime_model().get_ops()
                               if 'runtimePrecision' in op.get_rt_info()}
    assert {'i8', 'u8'} & int8_runtime_precisions  # OpenVINO runs int8 kernels, not dequantised float
    for feed in feeds:
        expected = [torch.from_numpy(array) for array in float_session.run(None, feed)]
        # the RPN's maps, within the bound of the graph's int8 grids, as in onnxruntime above
        assert relative_difference(expected[:10], int8_session.run(None, feed)[:10]) <= bound
