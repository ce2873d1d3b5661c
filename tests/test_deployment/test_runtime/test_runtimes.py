"""mmrmt.deployment.runtime.graph_session: a graph opened in OpenVINO answers the calls mmrmt makes on an onnxruntime
session, with torch's outputs in f32 at any size; bf16 is refused in one line where OpenVINO would quietly
run f32, and in onnxruntime."""
import os
import subprocess
import sys

import numpy as np
import openvino
import pytest
import torch
from mmdet.registry import MODELS

from mmrmt.deployment.export import TensorModeModel, export_onnx
from mmrmt.deployment.runtime import (RUNTIMES, RuntimeChoiceError, check_runtime, graph_session, open_graph,
                                      run_session, verification_inputs)
from mmrmt.deployment.runtime.graph_session import bf16_refusal, openvino_capabilities
from helpers.openvino_refusal import refused_in_process
from helpers.runtime_bounds import assert_runtime_within_format

#: The traced size, a larger one and one that is not a multiple of 32.
SIZES = ((64, 96), (128, 160), (75, 109))
TINY_RMT = dict(type='RMT', arch=dict(
    embed_dims=[16, 32, 64, 64], depths=[1, 1, 1, 1], num_heads=[2, 2, 4, 4], mlp_ratios=[2, 2, 2, 2],
    init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6], decomposed=[True, True, False, False],
    layer_scales=[False, False, True, True]))


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
    """A tiny RMT backbone with initialised weights and its dynamic ONNX file."""
    torch.manual_seed(0)
    network = MODELS.build(TINY_RMT)
    network.init_weights()
    model = TensorModeModel(network.eval())
    path = tmp_path_factory.mktemp('onnx') / 'rmt.onnx'
    export_onnx(model, model.example_inputs(*SIZES[0], batch=2), str(path), dynamic=True)
    return model, str(path)


@pytest.mark.parametrize('runtime', RUNTIMES)
def test_each_runtime_matches_torch_at_any_size(exported, runtime):
    model, path = exported
    inputs = verification_inputs(model, SIZES, batch=2)
    assert len(inputs) == 2 * len(SIZES)
    if runtime == 'openvino' and refused_in_process(lambda: open_graph(path, runtime)):
        return
    # float32 against the float64 forward: within LAMBDA times torch's own float32 error (runtime_bounds.py)
    assert_runtime_within_format(model, path, inputs, runtime)


def test_openvino_session_answers_as_onnxruntime(exported):
    model, path = exported
    if refused_in_process(lambda: open_graph(path, 'openvino')):
        return
    openvino_session, onnxruntime_session = open_graph(path, 'openvino'), open_graph(path, 'onnxruntime')
    assert [port.name for port in openvino_session.get_inputs()] == ['image']
    assert openvino_session.get_inputs()[0].shape == (None, 3, None, None)
    assert ([port.name for port in openvino_session.get_outputs()]
            == [port.name for port in onnxruntime_session.get_outputs()] == [f'feature_{i}' for i in range(4)])
    # f32 asked for explicitly: OpenVINO's default on CPUs with native bf16 would be bf16
    assert openvino_session.session.compiled.get_property('INFERENCE_PRECISION_HINT').get_type_name() == 'f32'
    inputs = model.example_inputs(70, 90, 3, torch.Generator().manual_seed(1))
    assert_runtime_within_format(model, path, {'3 random 70x90 images': inputs}, 'openvino')
    # named outputs come back in the order asked for: the same request, the same values
    outputs = run_session(openvino_session, inputs)
    last, first = openvino_session.run(['feature_3', 'feature_0'], {'image': inputs[0].numpy()})
    assert np.array_equal(last, outputs[3]) and np.array_equal(first, outputs[0])


def test_bf16_refusals_name_the_cpu_and_the_fix():
    assert bf16_refusal(['FP32', 'BF16', 'INT8']) is None
    message = bf16_refusal(['FP32', 'INT8', 'BIN'])
    assert message.startswith('--precision bf16: this CPU (') and '\n' not in message
    assert message.endswith('has no AVX-512 BF16 or AMX, and OpenVINO would run f32 instead (its CPU '
                            'capabilities: FP32, INT8, BIN); use --precision f32')
    with pytest.raises(RuntimeChoiceError, match=r"^--precision bf16 runs in OpenVINO only \(onnxruntime's CPU "
                                                 r'kernels are float32\): add --runtime openvino$'):
        check_runtime('onnxruntime', 'bf16')
    with pytest.raises(RuntimeChoiceError, match=r"^--runtime must be one of onnxruntime, openvino, got 'tvm'$"):
        check_runtime('tvm')


LAYER_NORM_UNDER_ISA = """
import os, sys, openvino, torch
path = sys.argv[1]
torch.onnx.export(torch.nn.LayerNorm(8), torch.ones(2, 5, 8), path, dynamo=False)
try:
    openvino.Core().compile_model(path, 'CPU', {'INFERENCE_PRECISION_HINT': 'f32'})
except RuntimeError as error:
    print('fails:', str(error).strip().splitlines()[-1])
else:
    print('compiles')
"""


@pytest.mark.parametrize('isa', ['SSE41', 'AVX2'])
def test_openvino_under_a_onednn_isa_limit_it_cannot_compile_is_refused(isa, monkeypatch, tmp_path):
    """OpenVINO's CPU plugin fails on a layer norm under ``ONEDNN_MAX_CPU_ISA=SSE41`` with a bare "bad
    combination": the tools refuse that setting up front with its fix, and allow the limits it compiles under
    (the compile is tried in a subprocess, as oneDNN reads the variable once a process)."""
    result = subprocess.run([sys.executable, '-c', LAYER_NORM_UNDER_ISA, str(tmp_path / 'norm.onnx')],
                            env=dict(os.environ, ONEDNN_MAX_CPU_ISA=isa), capture_output=True, text=True,
                            timeout=300)
    monkeypatch.setenv('ONEDNN_MAX_CPU_ISA', isa.lower())
    if isa in graph_session.OPENVINO_UNCOMPILABLE_ISAS:
        assert result.stdout.strip() == 'fails: bad combination', result.stdout + result.stderr[-2000:]
        with pytest.raises(RuntimeChoiceError, match=rf'^--runtime openvino: ONEDNN_MAX_CPU_ISA={isa} is set, '
                                                     r".+; unset ONEDNN_MAX_CPU_ISA or set it to AVX2 or above, or "
                                                     r'use --runtime onnxruntime$'):
            check_runtime('openvino')
        check_runtime('onnxruntime')
    else:
        assert result.stdout.strip() == 'compiles', result.stdout + result.stderr[-2000:]
        check_runtime('openvino')


BF16_UNDER_ISA = """
import sys, openvino, torch
class NormedAttention(torch.nn.Module):
    def forward(self, x):
        x = torch.nn.functional.layer_norm(x, (8, ))
        return torch.softmax(x @ x.transpose(1, 2), -1)
path = sys.argv[1]
torch.onnx.export(NormedAttention(), torch.ones(2, 5, 8), path, dynamo=False)
core = openvino.Core()
try:
    compiled = core.compile_model(path, 'CPU', {'INFERENCE_PRECISION_HINT': 'bf16'})
except RuntimeError as error:
    print('fails:', str(error).strip().splitlines()[-1])
else:
    print('compiles', compiled.get_property('INFERENCE_PRECISION_HINT').get_type_name(),
          'BF16' in core.get_property('CPU', 'OPTIMIZATION_CAPABILITIES'))
"""


@pytest.mark.parametrize('isa', ['AVX2', 'AVX512_CORE'])
def test_openvino_bf16_under_a_onednn_isa_limit_it_cannot_compile_is_refused(isa, monkeypatch, tmp_path):
    """On a bf16 CPU OpenVINO still reports BF16 under ``ONEDNN_MAX_CPU_ISA=AVX2`` but cannot compile a bf16
    graph there (no bf16 matmul below AVX-512); from AVX512_CORE on it compiles bf16. The tools refuse bf16
    under the limits below AVX-512 on every CPU (elsewhere OpenVINO's capabilities decide, tested above)."""
    graph = tmp_path / 'normed_attention.onnx'
    result = subprocess.run([sys.executable, '-c', BF16_UNDER_ISA, str(graph)],
                            env=dict(os.environ, ONEDNN_MAX_CPU_ISA=isa), capture_output=True, text=True, timeout=300)
    outcome = result.stdout.strip()
    assert outcome.startswith(('fails:', 'compiles')), result.stdout + result.stderr[-2000:]
    bf16_cpu = 'BF16' in openvino_capabilities()
    monkeypatch.setenv('ONEDNN_MAX_CPU_ISA', isa.lower())
    if isa in graph_session.OPENVINO_NO_BF16_ISAS:
        # a bf16 CPU fails to compile; another compiles f32 instead (the capability refusal's case)
        assert outcome.startswith('fails: could not create a primitive descriptor') if bf16_cpu else (
            outcome == 'compiles f32 False'), outcome
        with pytest.raises(RuntimeChoiceError, match=rf'^--precision bf16: ONEDNN_MAX_CPU_ISA={isa} is set, under '
                                                     r'which OpenVINO cannot compile bf16 .+; unset ONEDNN_MAX_CPU_'
                                                     r'ISA or set it to AVX512_CORE or above, or use --precision '
                                                     r'f32$'):
            check_runtime('openvino', 'bf16')
    else:
        assert outcome == ('compiles bf16 True' if bf16_cpu else 'compiles f32 False'), outcome
        if bf16_cpu:
            check_runtime('openvino', 'bf16')
        else:
            with pytest.raises(RuntimeChoiceError, match=r'^--precision bf16: this CPU \(.+\) has no AVX-512 BF16'):
                check_runtime('openvino', 'bf16')
    check_runtime('openvino', 'f32')


@pytest.mark.parametrize('capabilities,refused', [
    (['FP32', 'INT8', 'BIN'], True), (['FP32', 'BF16', 'INT8', 'BIN'], False)],
    ids=['avx2-or-avx512-without-bf16', 'avx512-bf16-or-amx'])
def test_bf16_is_refused_exactly_where_openvino_lacks_it(capabilities, refused, monkeypatch):
    """Both answers on any machine: the decision reads OpenVINO's capabilities, not this CPU (nor the
    kernel set the tests run under, which the test above covers)."""
    monkeypatch.delenv('ONEDNN_MAX_CPU_ISA', raising=False)
    monkeypatch.setattr(graph_session, 'openvino_capabilities', lambda: capabilities)
    if refused:
        with pytest.raises(RuntimeChoiceError, match=r'^--precision bf16: this CPU \(.+\) has no AVX-512 BF16'):
            check_runtime('openvino', 'bf16')
    else:
        check_runtime('openvino', 'bf16')
    check_runtime('openvino', 'f32')


def test_bf16_runs_where_openvino_has_it_and_is_refused_where_it_would_run_f32(exported):
    """This CPU's own answer (the branch depends on the machine; both hold wherever they run)."""
    model, path = exported
    if refused_in_process(lambda: open_graph(path, 'openvino', 'bf16')):  # before bf16 is looked at
        return
    if os.environ.get('ONEDNN_MAX_CPU_ISA', '').upper() in graph_session.OPENVINO_NO_BF16_ISAS:  # the test below
        with pytest.raises(RuntimeChoiceError, match=r'^--precision bf16: ONEDNN_MAX_CPU_ISA=\w+ is set'):
            open_graph(path, 'openvino', 'bf16')
        return
    if 'BF16' in openvino_capabilities():
        session = open_graph(path, 'openvino', 'bf16')
        assert session.session.compiled.get_property('INFERENCE_PRECISION_HINT').get_type_name() == 'bf16'
        # bf16's unit roundoff 2^-8 against the float64 forward, amplified as torch's float32 error is
        assert_runtime_within_format(model, path, verification_inputs(model, SIZES[:1], batch=2),
                                     'openvino', 'bf16')
    else:
        with pytest.raises(RuntimeChoiceError, match=r'^--precision bf16: this CPU \(.+\) has no AVX-512 BF16'):
            open_graph(path, 'openvino', 'bf16')
        # what the refusal spares the user: OpenVINO itself compiles a bf16 request as f32 here
        compiled = openvino.Core().compile_model(path, 'CPU', {'INFERENCE_PRECISION_HINT': 'bf16'})
        assert compiled.get_property('INFERENCE_PRECISION_HINT').get_type_name() == 'f32'
