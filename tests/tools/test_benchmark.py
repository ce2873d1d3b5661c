"""tools/analysis_tools/benchmark.py compares attention implementations in one run, and exported files in
onnxruntime and OpenVINO beside torch, with their outputs' difference from torch's."""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from mmrmt.benchmark import format_table
from mmrmt.deployment.runtime import cpu_features
from helpers.onnx_graphs import matmul_graph
from helpers.openvino_refusal import refused_by_the_tool
from helpers.tool_modules import exit_line, import_tool
from tool_process import DET_CONFIG, REPO, SEG_CONFIG, check_ok, run_tool, tool_env

TOOL = 'analysis_tools/benchmark.py'
REST_CONFIG = REPO / 'configs' / 'rest' / 'retinanet_rest-small_fpn_ms-1x_coco.py'
benchmark = import_tool('tools/analysis_tools/benchmark.py')
pytorch2onnx = import_tool('tools/deployment/pytorch2onnx.py')
ROW = re.compile(r'^\| (\w+(?: bf16 autocast)?) \| (infer|train) \| ([\d.]+) \| ([\d.]+) \| (\d+) \| ([\d.]+)x \| '
                 r'([\d.]+)x \| (\d+) \|$', re.M)


def rows(output: str) -> dict:
    return {(impl, mode): tuple(map(float, numbers)) for impl, mode, *numbers in ROW.findall(output)}


def test_backbone_table_has_every_impl_and_mode_with_ratios_to_reference():
    result = run_tool([TOOL, '--backbone', 'rmt-t', '--impl', 'fast', 'reference', '--batch', '2',
                       '--shape', '64', '96', '--mode', 'infer', 'train', '--repeats', '1', '--warmup', '0'])
    check_ok(result)
    table = rows(result.stdout)
    assert set(table) == {(impl, mode) for impl in ('fast', 'reference') for mode in ('infer', 'train')}
    for (impl, mode), (seconds, images_per_second, peak_mb, speedup, memory, process_peak_mb) in table.items():
        # img/s = batch / seconds, up to the 3 printed decimals of seconds
        assert seconds > 0 and abs(images_per_second * seconds - 2) <= images_per_second * 5e-4 + 0.01
        # the process's peak holds the interpreter, the model and what the iterations added
        assert 0 <= peak_mb < process_peak_mb
        if impl == 'reference':
            assert speedup == 1.0 and memory in (1.0, float('nan'))
    assert 'batch 2, input 64x96, cpu' in result.stdout


def test_autocast_rows_beside_float32_in_one_run():
    """``--amp none bf16``: a float32 and a bf16-autocast row per mode, ratios to float32."""
    result = run_tool([TOOL, '--backbone', 'rmt-t', '--amp', 'none', 'bf16', '--batch', '2', '--shape', '64', '64',
                       '--mode', 'infer', 'train', '--repeats', '1', '--warmup', '0'])
    check_ok(result)
    table = rows(result.stdout)
    assert set(table) == {(impl, mode) for impl in ('default', 'default bf16 autocast') for mode in ('infer', 'train')}
    assert all(table['default', mode][3] == 1.0 for mode in ('infer', 'train'))
    assert 'speed-up vs default |' in result.stdout and 'amp none bf16' in result.stdout


def test_a_two_stage_detector_predicts_and_trains_under_bf16_autocast():
    """mmcv's float32-only CPU kernels (RoIAlign, NMS) run in float32 under CPU autocast: Mask R-CNN
    predicts and trains in bf16 beside float32 (was refused in one line)."""
    result = run_tool([TOOL, DET_CONFIG, '--impl', 'fast', '--amp', 'none', 'bf16', '--shape', '64', '64',
                       '--mode', 'infer', 'train', '--repeats', '1', '--warmup', '0'])
    check_ok(result)
    assert set(rows(result.stdout)) == {(impl, mode) for impl in ('fast', 'fast bf16 autocast')
                                        for mode in ('infer', 'train')}


def test_whole_model_of_a_config_trains_and_predicts():
    result = run_tool([TOOL, DET_CONFIG, '--impl', 'fast', '--shape', '64', '64',
                       '--mode', 'infer', 'train', '--repeats', '1', '--warmup', '0'])
    check_ok(result)
    assert set(rows(result.stdout)) == {('fast', 'infer'), ('fast', 'train')}


@pytest.mark.parametrize('args, message', [
    (['--impl', 'fast'], 'give either a config file or --backbone TYPE-ARCH, not both or neither.'),
    ([str(DET_CONFIG), '--backbone', 'rmt-t'], 'give either a config file or --backbone TYPE-ARCH, not both or '
                                               'neither.'),
    (['--backbone', 'rmt-t', '--device', 'tpu'], "--device must be 'cpu' or 'cuda', got 'tpu'."),
    (['--backbone', 'rmt-t', '--impl', 'fast', 'fast'], "--impl lists an implementation twice: ['fast', 'fast']."),
    (['--backbone', 'rmt-t', '--amp', 'bf16', 'bf16'], "--amp lists a precision twice: ['bf16', 'bf16']."),
    (['--backbone', 'rmt-t', '--warmup', '-1'], '--repeats and --batch must be >= 1 and --warmup >= 0.'),
    (['--backbone', 'rmt-t', '--onnx', 'rmt-t.onnx'], '--onnx times inference on the CPU: give --mode infer, '
                                                      'no --device cuda, no --amp (--precision f32 bf16 compares '
                                                      'precisions).'),
    (['--backbone', 'rmt-t', '--runtime', 'openvino'], '--runtime and --precision choose how --onnx files run: '
                                                       'add --onnx FILE.'),
    (['--backbone', 'rmt-t', '--mode', 'infer', '--onnx', str(DET_CONFIG), '--precision', 'bf16'],
     "--precision bf16 runs in OpenVINO only (onnxruntime's CPU kernels are float32): add --runtime openvino"),
    (['--backbone', 'rmt-t', '--mode', 'infer', '--onnx', 'missing.onnx'], '--onnx file not found: missing.onnx'),
    (['--backbone', 'rmt-t', '--upstream-repo', '.'], '--upstream-repo compares ResT backbones: give --backbone '
                                                      'rest-ARCH (e.g. rest-lite), no config, no --onnx.'),
    (['--backbone', 'swin'], "--backbone must be TYPE-ARCH with TYPE in ['resmlp', 'rest', 'rmt'], e.g. rmt-t; "
                             "got 'swin'."),
    (['--backbone', 'resmlp-12', '--impl', 'reference'],
     '--impl reference: ResMLP has one implementation, give --impl fast or no --impl (--impl compares the '
     'forms of RMT and ResT).'),
    (['--backbone', 'rmt-zz'], "--backbone rmt-zz: RMT has no arch 'zz'; choose one of ['b', 'base', 'l', 'large', "
                               "'s', 'small', 't', 'tiny']."),
    (['--backbone', 'rmt-t', '--threads', '-2'], "--threads must be >= 1, got -2 (leave it out for torch's default)."),
    (['--backbone', 'rmt-t', '--shape', '0', '0'], '--shape 0 0: each side must be >= 1 pixel'),
    (['--backbone', 'rmt-t', '--shape', '30000', '30000'],
     "--shape 30000 30000 is too large to time: at most 4096 pixels a side and 4,194,304 pixels in all (the "
     "model's attention memory grows with the square of the pixels)"),
    ([str(DET_CONFIG), '--mode', 'infer', '--onnx', str(DET_CONFIG), '--runtime', 'openvino', '--precision', 'bf16'],
     '--precision bf16 without f32: the table compares every row with float32 (speed-up, memory, error); give '
     '--precision f32 bf16'),
])
def test_refused_arguments_are_one_line_before_any_worker(args, message, capsys):
    assert exit_line(benchmark.main, args) == f'error: {message}'
    assert capsys.readouterr().out == ''


def test_rest_implementations_are_compared_like_rmts():
    """ResT has the same table (fast and the step-by-step reference): a row each, built with that impl."""
    result = run_tool([TOOL, '--backbone', 'rest-lite', '--impl', 'fast', 'reference', '--batch', '1',
                       '--shape', '64', '64', '--mode', 'infer', '--repeats', '1', '--warmup', '0'])
    check_ok(result)
    table = rows(result.stdout)
    assert set(table) == {('fast', 'infer'), ('reference', 'infer')}
    assert table['reference', 'infer'][3] == 1.0  # the ratios are to the reference
    unknown = run_tool([TOOL, '--backbone', 'rest-lite', '--impl', 'flash', '--shape', '32', '32',
                        '--mode', 'infer', '--repeats', '1'])
    assert unknown.returncode == 1 and 'Traceback' not in unknown.stderr, unknown.stderr[-2000:]
    assert unknown.stderr.strip().splitlines()[-1].startswith("error: flash failed: ValueError: ResT: impl must be")


def test_a_contender_that_fails_in_its_worker_is_one_line():
    """Training at batch 1 on a 32x32 input leaves BatchNorm one value per channel at stride 32."""
    result = run_tool([TOOL, '--backbone', 'rmt-t', '--batch', '1', '--shape', '32', '32', '--mode', 'train',
                       '--repeats', '1', '--warmup', '0'])
    assert result.returncode == 1 and 'Traceback' not in result.stderr, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        'error: default failed: ValueError: Expected more than 1 value per channel when training, got input size '
        'torch.Size([1, 512, 1, 1])')


def test_whole_model_of_another_backbone_than_rmt_takes_impl_fast():
    """--impl fast names the one implementation of ResT, as with --backbone (its config has no impl)."""
    result = run_tool([TOOL, REST_CONFIG, '--impl', 'fast', '--shape', '64', '64', '--batch', '1',
                       '--mode', 'infer', '--repeats', '1', '--warmup', '0'])
    check_ok(result)
    assert set(rows(result.stdout)) == {('fast', 'infer')}


def test_bad_arguments_are_clear_errors():
    neither = run_tool([TOOL, '--impl', 'fast'])
    assert neither.returncode == 1 and 'usage:' not in neither.stderr
    assert neither.stderr.strip().splitlines()[-1] == ('error: give either a config file or --backbone '
                                                       'TYPE-ARCH, not both or neither.')
    unknown = run_tool([TOOL, '--backbone', 'rmt-t', '--impl', 'flash', '--shape', '32', '32',
                        '--mode', 'infer', '--repeats', '1'])
    assert unknown.returncode == 1 and 'Traceback' not in unknown.stderr
    assert unknown.stderr.strip().splitlines()[-1].startswith(
        "error: flash failed: ValueError: RMT: impl must be one of ('fast', 'flex', 'reference')")


#: Put first on a process's path (and its workers', which inherit the environment):
#: MMDetection cannot be imported, as in a segmentation-only install.
WITHOUT_MMDET = """import sys
sys.modules['mmdet'] = None
"""


def test_backbones_build_with_only_mmsegmentation_installed(tmp_path):
    (tmp_path / 'sitecustomize.py').write_text(WITHOUT_MMDET)
    env = tool_env()
    env['PYTHONPATH'] = os.pathsep.join(filter(None, (str(tmp_path), env.get('PYTHONPATH'))))
    blocked = subprocess.run([sys.executable, '-c', 'import mmdet'], env=env, capture_output=True, text=True)
    assert blocked.returncode != 0 and 'ModuleNotFoundError' in blocked.stderr
    result = subprocess.run([sys.executable, str(REPO / 'tools' / TOOL), '--backbone', 'rest-lite', '--impl',
                             'fast', '--batch', '1', '--shape', '32', '32', '--mode', 'infer', '--repeats', '1',
                             '--warmup', '0'], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    check_ok(result)
    assert set(rows(result.stdout)) == {('fast', 'infer')}


def test_exported_model_in_both_runtimes_beside_torch_with_output_errors(tmp_path):
    out = tmp_path / 'upernet.onnx'
    # exported (and checked against torch by --verify) in this process: the benchmark's run is what is tested
    pytorch2onnx.main([str(SEG_CONFIG), '--shape', '64', '96', '--batch', '2', '--out', str(out), '--verify'])
    result = run_tool([TOOL, SEG_CONFIG, '--impl', 'fast', '--batch', 2, '--shape', 64, 96, '--mode', 'infer',
                       '--repeats', 1, '--warmup', 0, '--onnx', out, '--runtime', 'onnxruntime', 'openvino'])
    if refused_by_the_tool(result):
        return
    check_ok(result)
    assert f'# CPU {cpu_features().summary()}' in result.stdout.splitlines()
    assert re.search(rf'^# tensor mode in torch and {re.escape(str(out))} in onnxruntime [\d.]+, openvino \S+$',
                     result.stdout, re.M)
    # a fixed-size file: no image chunks
    assert f'# {out}: the whole batch a run (a fixed batch, or not one image an output row)' in result.stdout
    rows = re.findall(r'^\| ([^|]+?) \| infer \| ([\d.]+) \| [\d.]+ \| \d+ \| [\d.]+x \| [\d.]+x \| \d+ \| (\S+) \|$',
                      result.stdout, re.M)
    assert [label for label, _, _ in rows] == ['fast', f'onnxruntime {out}', f'openvino f32 {out}']
    errors = {label: float(error) for label, _, error in rows}
    # every row against torch's model of the config, which holds the weights the export holds (both drawn from
    # the same seed): the file in either runtime is float32 in another order, within --verify's own threshold
    # (pytorch2onnx.py); a graph compared with itself would show 0
    assert errors['fast'] == 0, errors
    assert 0 < errors[f'onnxruntime {out}'] <= pytorch2onnx.DEFAULT_TOLERANCE['f32'], errors
    assert 0 < errors[f'openvino f32 {out}'] <= pytorch2onnx.DEFAULT_TOLERANCE['f32'], errors


@pytest.mark.parametrize('model, outputs, message', [
    ([str(SEG_CONFIG)], ['head_0'], 'is the graph of a single-stage detector, but {config} describes a segmentor '
                                    '(EncoderDecoder): give the config the graph was exported from, or export this '
                                    "config's model with tools/deployment/pytorch2onnx.py"),
    ([str(DET_CONFIG)], ['seg_logits'], 'is the graph of a segmentor, but {config} describes a two-stage detector '
                                        'with masks (MaskRCNN)'),
    ([str(DET_CONFIG)], ['feature_0', 'seg_logits'], 'is the graph of a backbone, but {config} describes a '
                                                     'two-stage detector'),
    (['--backbone', 'rmt-t'], ['seg_logits'], 'is the graph of a segmentor, but --backbone rmt-t times a backbone: '
                                              'give the config the graph was exported from, or export the backbone '
                                              'with tools/deployment/pytorch2onnx.py --backbone-only'),
])
def test_a_graph_of_another_model_is_refused_as_test_onnx_refuses_it(model, outputs, message, tmp_path, capsys):
    """The check of tools/deployment/test_onnx.py, before any worker: a graph of another model is not timed
    (nor its outputs compared) as the config's; a config's backbone graphs only all together."""
    graphs = [matmul_graph(tmp_path / f'graph{index}.onnx', output) for index, output in enumerate(outputs)]
    line = exit_line(benchmark.main, [*model, '--mode', 'infer', '--onnx', *graphs])
    assert line.startswith(f'error: {graphs[0]} ') and message.format(config=model[0]) in line, line
    assert capsys.readouterr().out == ''


def test_a_configs_backbone_graph_is_timed_beside_that_backbone(tmp_path):
    """pytorch2onnx.py --backbone-only of a config, beside the config: the torch rows run its backbone with the
    export's weights, so the file's error is float32's rounding."""
    out = tmp_path / 'backbone.onnx'
    pytorch2onnx.main([str(SEG_CONFIG), '--backbone-only', '--shape', '64', '96', '--out', str(out)])
    result = run_tool([TOOL, SEG_CONFIG, '--impl', 'fast', '--shape', 64, 96, '--mode', 'infer', '--repeats', 1,
                       '--warmup', 0, '--onnx', out])
    check_ok(result)
    assert result.stdout.startswith(f"# {SEG_CONFIG}'s backbone: batch 1, input 64x96")
    errors = dict(re.findall(r'^\| ([^|]+?) \| infer \|.* (\S+) \|$', result.stdout, re.M))
    assert errors['fast'] == '0.0e+00', errors
    assert 0 < float(errors[f'onnxruntime {out}']) <= pytorch2onnx.DEFAULT_TOLERANCE['f32'], errors


def test_every_rows_error_is_against_the_torch_model():
    """A graph whose runs agree with each other but not with torch shows its difference from torch."""
    args = argparse.Namespace(
        config=None, backbone='rmt-t', impl=['fast'], batch=1, onnx=['g.onnx'], runtime=['onnxruntime', 'openvino'],
        precision=['f32'], upstream_repo=None, amp=['none'], compile=False)
    torch_out, graph_out = [np.ones((1, 4), np.float32)], [np.full((1, 4), 1.5, np.float32)]
    results = {'infer': {'fast': (1., 1, 1, torch_out), 'onnxruntime g.onnx': (0.5, 1, 1, graph_out),
                         'openvino f32 g.onnx': (0.5, 1, 1, graph_out)}}
    lines = format_table(args, results).splitlines()
    assert lines[0].endswith('| error vs fast |')
    assert [line.rsplit('|', 2)[1].strip() for line in lines[2:]] == ['0.0e+00', '5.0e-01', '5.0e-01']
    results['infer']['onnxruntime g.onnx'] = (0.5, 1, 1, [np.ones((1, 8), np.float32)])
    assert format_table(args, results).splitlines()[3].endswith('| other shapes |')


def test_compiled_rows_give_their_outputs_error_where_the_iterations_return_outputs():
    """--compile: a backbone's inference rows against the eager baseline's features; '-' where an iteration
    returns none (training, a config's predict)."""
    args = argparse.Namespace(config=None, backbone='rmt-t', impl=[None], batch=1, onnx=None, upstream_repo=None,
                              amp=['none'], compile=True)
    features = [np.full((1, 4), 2., np.float32)]
    results = {'infer': {'default': (1., 1, 1, features), 'default compiled': (0.5, 1, 1, [features[0] + 1e-6])},
               'train': {'default': (2., 1, 1, None), 'default compiled': (1., 1, 1, None)}}
    lines = format_table(args, results).splitlines()
    assert lines[0].endswith('| error vs default |')
    assert [line.rsplit('|', 2)[1].strip() for line in lines[2:]] == ['0.0e+00', '4.8e-07', '-', '-']
    assert lines[3].startswith('| default compiled | infer | 0.500 | 2.00 | 0 | 2.00x |')
