"""mmrmt.benchmark.check_args: arguments the benchmark cannot run refused in one line naming the problem and
the fix, in the parent before any worker starts (tools/analysis_tools/benchmark.py's refusal as the user
sees it is tests/tools/test_benchmark.py's)."""
import argparse

import pytest

from mmrmt.benchmark import check_args
from mmrmt.cpu_features import CPUFeatures
from mmrmt.utils import PreflightError
from helpers.onnx_graphs import matmul_graph
from helpers.tiny_configs import DET_CONFIG, SEG_CONFIG

pytest.importorskip('onnxruntime')
#: benchmark.py's arguments as its parser gives them, a backbone timed in both modes.
DEFAULTS = dict(config=None, backbone='rmt-t', impl=[None], batch=1, shape=(64, 64), mode=['infer', 'train'],
                repeats=1, warmup=0, amp=['none'], device='cpu', threads=None, onnx=None, runtime=['onnxruntime'],
                precision=['f32'], upstream_repo=None, compile=False, compile_options=[])


def refusal(**given) -> str:
    with pytest.raises(PreflightError) as error:
        check_args(argparse.Namespace(**dict(DEFAULTS, **given)))
    assert '\n' not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize('given, message', [
    (dict(backbone=None, impl=['fast']), 'give either a config file or --backbone TYPE-ARCH, not both or neither.'),
    (dict(config=str(DET_CONFIG)), 'give either a config file or --backbone TYPE-ARCH, not both or neither.'),
    (dict(device='tpu'), "--device must be 'cpu' or 'cuda', got 'tpu'."),
    (dict(impl=['fast', 'fast']), "--impl lists an implementation twice: ['fast', 'fast']."),
    (dict(amp=['bf16', 'bf16']), "--amp lists a precision twice: ['bf16', 'bf16']."),
    (dict(warmup=-1), '--repeats and --batch must be >= 1 and --warmup >= 0.'),
    (dict(onnx=['rmt-t.onnx']), '--onnx times inference on the CPU: give --mode infer, no --device cuda, no --amp '
                                '(--precision f32 bf16 compares precisions).'),
    (dict(runtime=['openvino']), '--runtime and --precision choose how --onnx files run: add --onnx FILE.'),
    (dict(mode=['infer'], onnx=[str(DET_CONFIG)], precision=['bf16']),
     "--precision bf16 runs in OpenVINO only (onnxruntime's CPU kernels are float32): add --runtime openvino"),
    (dict(mode=['infer'], onnx=['missing.onnx']), '--onnx file not found: missing.onnx; give the path of an .onnx '
     'file, or export one with tools/deployment/pytorch2onnx.py'),
    (dict(compile=True, onnx=['rmt-t.onnx'], mode=['infer']), '--compile adds compiled rows of the torch model, whose '
     'rows time tensor mode beside --onnx files: leave out --compile or --onnx'),
    (dict(upstream_repo='.'), '--upstream-repo compares ResT backbones: give --backbone rest-ARCH (e.g. rest-lite), '
                              'no config, no --onnx.'),
    (dict(backbone='swin'), "--backbone must be TYPE-ARCH with TYPE in ['resmlp', 'rest', 'rmt'], e.g. rmt-t; got "
                            "'swin'."),
    (dict(backbone='resmlp-12', impl=['reference']),
     '--impl reference: ResMLP has one implementation, give --impl fast or no --impl (--impl compares the forms of '
     'RMT and ResT).'),
    (dict(backbone='rmt-zz'), "--backbone rmt-zz: RMT has no arch 'zz'; choose one of ['b', 'base', 'l', 'large', "
                              "'s', 'small', 't', 'tiny']."),
    (dict(threads=-2), "--threads must be >= 1, got -2 (leave it out for torch's default)."),
    (dict(shape=(0, 0)), '--shape 0 0: each side must be >= 1 pixel'),
    (dict(shape=(30000, 30000)), "--shape 30000 30000 is too large to time: at most 4096 pixels a side and 4,194,304 "
                                 "pixels in all (the model's attention memory grows with the square of the pixels)"),
    (dict(config=str(DET_CONFIG), backbone=None, mode=['infer'], onnx=[str(DET_CONFIG)], runtime=['openvino'],
          precision=['bf16']), '--precision bf16 without f32: the table compares every row with float32 (speed-up, '
                               'memory, error); give --precision f32 bf16'),
])
def test_refused_arguments_are_one_line(given, message):
    assert refusal(**given) == message


@pytest.mark.parametrize('given, outputs, message', [
    (dict(config=str(SEG_CONFIG)), ['head_0'], 'is the graph of a single-stage detector, but {config} describes a '
     "segmentor (EncoderDecoder): give the config the graph was exported from, or export this config's model with "
     'tools/deployment/pytorch2onnx.py'),
    (dict(config=str(DET_CONFIG)), ['seg_logits'], 'is the graph of a segmentor, but {config} describes a two-stage '
                                                   'detector with masks (MaskRCNN)'),
    (dict(config=str(DET_CONFIG)), ['feature_0', 'seg_logits'], 'is the graph of a backbone, but {config} describes '
                                                                'a two-stage detector'),
    (dict(), ['seg_logits'], 'is the graph of a segmentor, but --backbone rmt-t times a backbone: give the config the '
                             'graph was exported from, or export the backbone with tools/deployment/pytorch2onnx.py '
                             '--backbone-only'),
])
def test_a_graph_of_another_model_is_refused_as_test_onnx_refuses_it(given, outputs, message, tmp_path):
    """The check of tools/deployment/test_onnx.py: a graph of another model is not timed (nor its outputs
    compared) as the config's; a config's backbone graphs only all together."""
    graphs = [str(matmul_graph(tmp_path / f'graph{index}.onnx', output)) for index, output in enumerate(outputs)]
    given = dict(given, backbone=None) if 'config' in given else given
    line = refusal(**given, mode=['infer'], onnx=graphs)
    assert line.startswith(f'{graphs[0]} ') and message.format(config=given.get('config')) in line, line


def test_bf32_is_the_inference_tools_amp_bf32(monkeypatch):
    """--amp bf32 is refused as the tools' --amp bf32 is (mmrmt.utils.amp.check_amp): with --compile here."""
    amx = CPUFeatures('Intel(R) Xeon(R) Platinum 8480+', frozenset({'avx512f', 'avx512_bf16', 'amx_bf16'}))
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: amx)
    assert refusal(amp=['none', 'bf32'], compile=True) == (
        '--amp bf32 with --compile: Inductor neither keys its cached graphs on bf32 nor gains from it '
        '(docs/benchmark.md); give --amp (bf16 autocast) with --compile')
