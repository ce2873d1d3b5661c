"""tools/analysis_tools/benchmark.py compares attention implementations in one run, and exported files in
onnxruntime and OpenVINO beside torch, with their outputs' difference from torch's."""
import os
import re
import subprocess
import sys

from mmrmt.deployment.runtime import cpu_features
from helpers.openvino_refusal import refused_by_the_tool
from helpers.tool_modules import import_tool
from tool_process import DET_CONFIG, REPO, SEG_CONFIG, check_ok, run_tool, tool_env

TOOL = 'analysis_tools/benchmark.py'
REST_CONFIG = REPO / 'configs' / 'rest' / 'retinanet_rest-small_fpn_ms-1x_coco.py'
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


def test_rest_implementations_are_compared_like_rmts():
    """ResT has the same table (fast and the step-by-step reference): a row each, built with that impl."""
    result = run_tool([TOOL, '--backbone', 'rest-lite', '--impl', 'fast', 'reference', '--batch', '1',
                       '--shape', '64', '64', '--mode', 'infer', '--repeats', '1', '--warmup', '0'])
    check_ok(result)
    table = rows(result.stdout)
    assert set(table) == {('fast', 'infer'), ('reference', 'infer')}
    assert table['reference', 'infer'][3] == 1.0  # the ratios are to the reference


def test_a_contender_that_fails_in_its_worker_is_one_line():
    """Training at batch 1 on a 32x32 input leaves BatchNorm one value per channel at stride 32. (A contender
    whose model does not build, e.g. --impl flash, ends its worker alike, with the backbone's own line.)"""
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
