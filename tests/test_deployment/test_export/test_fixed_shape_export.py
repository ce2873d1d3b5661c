"""A graph of fixed shapes holds no attention logits over the export budget (its attention takes the
queries a few at a time) and computes torch's outputs in onnxruntime; a graph that takes any size
keeps one pass (run bounds traced at one size would be wrong at another)."""
import importlib
import math
from typing import List, Optional

import numpy as np
import onnx
import onnxruntime
import openvino
import pytest
import torch
from mmdet.registry import MODELS

from mmrmt.deployment.export import TensorModeModel, export_onnx, graph_inputs
from mmrmt.deployment.runtime import open_graph, verification_inputs
from mmrmt.deployment.runtime.image_chunks import inferred_graph, known_shape, shape_skeleton
from helpers.backbones import REST_TINY, RMT_TINY
from helpers.openvino_refusal import refused_in_process
from helpers.runtime_bounds import assert_runtime_within_format

attention_module = importlib.import_module('mmrmt.deployment.export.plain_attention')
SIZE = (96, 128)
BATCH = 2
#: Decomposed and full MaSA; ResT's single head (plain attention) and mixed heads (instance norm).
BACKBONES = {'rmt': dict(type='RMT', arch=RMT_TINY), 'rest': dict(type='ResT', arch=REST_TINY)}
#: The ops whose input is an attention's (B, ..., queries, keys) logits: RMT's and ResT's single-head
#: softmax; ResT's mixed heads, whose deviations start from expm1, exported with tanh.
LOGITS_CONSUMERS = ('Softmax', 'Tanh')


def attention_logits_bytes(path: str) -> List[Optional[int]]:
    """Bytes of each attention logits tensor of the graph at ``SIZE``, by ONNX's shape inference (None
    where it leaves a dimension unknown: in dynamic graphs)."""
    skeleton = onnx.load(path)
    name = graph_inputs(skeleton)[0].name
    shape_skeleton(skeleton)
    graph = inferred_graph(skeleton, name, (BATCH, 3, *SIZE))
    shapes = {value.name: known_shape(value) for value in graph.value_info}
    logits = [shapes[node.input[0]] for node in graph.node if node.op_type in LOGITS_CONSUMERS]
    return [None if shape is None else int(np.prod(shape)) * 4 for shape in logits]


def initialised(backbone: dict) -> TensorModeModel:
    """``backbone`` built and initialised from seed 0, in eval mode."""
    torch.manual_seed(0)
    network = MODELS.build(backbone)
    network.init_weights()
    return TensorModeModel(network.eval())


def stage_tokens(size, stage: int) -> int:
    """The tokens of a pyramid stage (strides 4, 8, 16, 32) at an input ``size``."""
    return (size[0] // 2**(stage + 2)) * (size[1] // 2**(stage + 2))


def decay_table_bytes(arch: dict, size, stage: int) -> int:
    """The bytes of a full stage's float32 (heads, tokens, tokens) decay table."""
    return arch['num_heads'][stage] * stage_tokens(size, stage)**2 * 4


@pytest.fixture(scope='module', params=list(BACKBONES))
def model(request):
    return initialised(BACKBONES[request.param])


def test_fixed_shape_graph_attends_in_query_runs_within_the_budget(model, tmp_path, monkeypatch):
    inputs = model.example_inputs(*SIZE, batch=BATCH)
    export_onnx(model, inputs, str(tmp_path / 'one_pass.onnx'))  # a tiny model: within the default budget
    one_pass = attention_logits_bytes(str(tmp_path / 'one_pass.onnx'))
    assert one_pass and None not in one_pass
    budget = max(one_pass) // 4
    monkeypatch.setattr(attention_module, 'EXPORT_LOGITS_BYTES', budget)
    monkeypatch.setattr(attention_module, 'LOGITS_OVER_QUERIES', 0)  # the budget alone
    export_onnx(model, inputs, str(tmp_path / 'runs.onnx'))
    runs = attention_logits_bytes(str(tmp_path / 'runs.onnx'))
    assert max(runs) <= budget < max(one_pass)
    assert sum(runs) == sum(one_pass)  # every query attended once, in more, smaller runs
    assert len(runs) > len(one_pass)
    assert_runtime_within_format(model, str(tmp_path / 'runs.onnx'),
                                 verification_inputs(model, [SIZE], BATCH, picture_batch=BATCH))

    export_onnx(model, inputs, str(tmp_path / 'dynamic.onnx'), dynamic=True)
    dynamic = attention_logits_bytes(str(tmp_path / 'dynamic.onnx'))
    assert len(dynamic) == len(one_pass)  # one pass each, of the logits' sizes where shape inference knows them
    assert all(size in (None, expected) for size, expected in zip(dynamic, one_pass))


def test_full_attention_over_the_budget_adds_its_decay_by_grid_rows(tmp_path, monkeypatch):
    """Where a full stage's (tokens, tokens) decay table would exceed the budget, RMT's export adds the
    Manhattan decay by grid row and column: onnxruntime's optimised graph holds no such constant per
    block (at 800x1216 RMT-T's would be 462 MB each), and the outputs are torch's."""
    size = (160, 224)  # full stages of 10x14 and 5x7 tokens: no weight or row table is 140 or 35 square
    full_stages = [stage for stage, decomposed in enumerate(RMT_TINY['decomposed']) if not decomposed]
    tables = [decay_table_bytes(RMT_TINY, size, stage) for stage in full_stages]
    monkeypatch.setattr(attention_module, 'EXPORT_LOGITS_BYTES', min(tables) - 1)
    model = initialised(BACKBONES['rmt'])
    path, optimised = str(tmp_path / 'rmt.onnx'), str(tmp_path / 'optimised.onnx')
    export_onnx(model, model.example_inputs(*size, batch=BATCH), path)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = optimised
    onnxruntime.InferenceSession(path, options, providers=['CPUExecutionProvider'])
    full_grids = [stage_tokens(size, stage) for stage in full_stages]
    shapes = [tuple(initializer.dims) for initializer in onnx.load(optimised).graph.initializer]
    assert shapes and not [shape for shape in shapes if len(shape) >= 2 and shape[-1] == shape[-2] in full_grids]
    assert_runtime_within_format(model, path, verification_inputs(model, [size], BATCH, picture_batch=BATCH))


def test_openvino_compiles_no_token_by_token_decay_table(tmp_path):
    """OpenVINO sums two constants added to one tensor into one constant: RMT's grid-row form adds its
    column and row terms to two views of the logits, so that the compiled model holds less constant data
    than one full block's (tokens, tokens) decay table (RetinaNet RMT-T at 800x1216 compiled to 5.6 GB of
    resident memory when it did not), and computes torch's outputs."""
    size = (160, 224)
    arch = dict(RMT_TINY, decomposed=[False] * 4)  # a full first stage: 40x56 tokens, a 40 MB table
    model = initialised(dict(type='RMT', arch=arch))
    path = str(tmp_path / 'rmt.onnx')
    export_onnx(model, model.example_inputs(*size, batch=BATCH), path)
    if refused_in_process(lambda: open_graph(path, 'openvino')):
        return
    compiled = openvino.Core().compile_model(path, 'CPU', {'INFERENCE_PRECISION_HINT': 'f32'})
    constant_bytes = sum(math.prod(op.outputs()[0].get_shape()) * op.outputs()[0].get_element_type().size
                         for op in compiled.get_runtime_model().get_ops()
                         if op.get_rt_info()['layerType'].astype(str) == 'Const')
    assert 0 < constant_bytes < decay_table_bytes(arch, size, 0)
    assert_runtime_within_format(model, path, verification_inputs(model, [size], BATCH, picture_batch=BATCH),
                                 'openvino')
