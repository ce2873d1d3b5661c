"""tools/analysis_tools/benchmark.py's rows and header, in-process: its ``main`` with each contender's worker
(:func:`mmrmt.benchmark.workers.guarded_worker`) run in this process, one after the other, and its messages read
by the parent's :func:`~mmrmt.benchmark.workers.receive`. The workers as processes, interleaved, are
tests/tools/test_benchmark.py's."""
import re
import statistics
from typing import Dict

import pytest

from mmrmt.benchmark.contenders import contenders
from mmrmt.benchmark.workers import Result, guarded_worker, receive
from mmrmt.deployment.runtime import cpu_features
from helpers.benchmark_table import rows
from helpers.openvino_refusal import refused_in_process
from helpers.tiny_configs import DET_CONFIG, SEG_CONFIG
from helpers.tool_modules import REPO, exit_line, import_tool

benchmark = import_tool('tools/analysis_tools/benchmark.py')
pytorch2onnx = import_tool('tools/deployment/pytorch2onnx.py')
REST_CONFIG = REPO / 'configs' / 'rest' / 'retinanet_rest-small_fpn_ms-1x_coco.py'


class Messages:
    """One direction of a worker's pipe, in this process: what was sent, in order."""

    def __init__(self, messages=()) -> None:
        self.messages = list(messages)

    def send(self, message) -> None:
        self.messages.append(message)

    def recv(self):
        return self.messages.pop(0)

    def poll(self, timeout: float) -> bool:
        return bool(self.messages)


class WorkerEnd:
    """A worker's end of its pipe: told 'step' ``steps`` times, then 'done'."""

    def __init__(self, steps: int) -> None:
        self.inbox, self.outbox = Messages(['step'] * steps + ['done']), Messages()

    def send(self, message) -> None:
        self.outbox.send(message)

    def recv(self):
        return self.inbox.recv()


def contenders_in_process(args, mode: str) -> Dict[str, Result]:
    """:func:`mmrmt.benchmark.time_contenders`'s results, each worker run here to its end in turn."""
    results = {}
    for contender in contenders(args):
        label, end = contender[0], WorkerEnd(args.warmup + args.repeats)
        guarded_worker(args, contender, mode, end)
        receive(end.outbox, None, label)  # 'ready', or torch.compile's line
        times = [receive(end.outbox, None, label) for _ in range(args.warmup + args.repeats)][args.warmup:]
        results[label] = (statistics.median(times), *receive(end.outbox, None, label))
    return results


@pytest.fixture
def run(monkeypatch, capsys):
    """Run the tool's ``main(args)`` with its workers in this process; return what it printed."""
    monkeypatch.setattr(benchmark, 'time_contenders', contenders_in_process)

    def tool_output(args: list) -> str:
        capsys.readouterr()
        benchmark.main([str(arg) for arg in args + ['--repeats', 1, '--warmup', 0]])
        return capsys.readouterr().out
    return tool_output


def test_autocast_rows_beside_float32_in_one_run(run):
    """``--amp none bf16``: a float32 and a bf16-autocast row per mode, ratios to float32."""
    output = run(['--backbone', 'rmt-t', '--amp', 'none', 'bf16', '--batch', 2, '--shape', 32, 32, '--mode', 'infer',
                  'train'])
    table = rows(output)
    assert set(table) == {(impl, mode) for impl in ('default', 'default bf16 autocast') for mode in ('infer', 'train')}
    assert all(table['default', mode][3] == 1.0 for mode in ('infer', 'train'))
    assert 'speed-up vs default |' in output and 'amp none bf16' in output


def test_a_two_stage_detector_predicts_and_trains_under_bf16_autocast(run):
    """mmcv's float32-only CPU kernels (RoIAlign, NMS) run in float32 under CPU autocast: Mask R-CNN
    predicts and trains in bf16 beside float32 (was refused in one line)."""
    output = run([DET_CONFIG, '--impl', 'fast', '--amp', 'none', 'bf16', '--shape', 64, 64, '--mode', 'infer', 'train'])
    assert set(rows(output)) == {(impl, mode) for impl in ('fast', 'fast bf16 autocast') for mode in ('infer', 'train')}


def test_rest_implementations_are_compared_like_rmts(run):
    """ResT has the same table (fast and the step-by-step reference): a row each, built with that impl."""
    table = rows(run(['--backbone', 'rest-lite', '--impl', 'fast', 'reference', '--batch', 1, '--shape', 64, 64,
                      '--mode', 'infer']))
    assert set(table) == {('fast', 'infer'), ('reference', 'infer')}
    assert table['reference', 'infer'][3] == 1.0  # the ratios are to the reference


def test_a_contender_that_fails_in_its_worker_is_one_line(monkeypatch):
    """Training at batch 1 on a 32x32 input leaves BatchNorm one value per channel at stride 32. (A contender
    whose model does not build, e.g. --impl flash, ends its worker alike, with the backbone's own line.)"""
    monkeypatch.setattr(benchmark, 'time_contenders', contenders_in_process)
    assert exit_line(benchmark.main, ['--backbone', 'rmt-t', '--batch', 1, '--shape', 32, 32, '--mode', 'train',
                                      '--repeats', 1, '--warmup', 0]) == (
        'error: default failed: ValueError: Expected more than 1 value per channel when training, got input size '
        'torch.Size([1, 512, 1, 1])')


def test_whole_model_of_another_backbone_than_rmt_takes_impl_fast(run):
    """--impl fast names the one implementation of ResT, as with --backbone (its config has no impl)."""
    output = run([REST_CONFIG, '--impl', 'fast', '--shape', 64, 64, '--batch', 1, '--mode', 'infer'])
    assert set(rows(output)) == {('fast', 'infer')}


def test_exported_model_in_both_runtimes_beside_torch_with_output_errors(run, tmp_path):
    out = tmp_path / 'upernet.onnx'
    # exported (and checked against torch by --verify) here: the benchmark's run is what is tested
    pytorch2onnx.main([str(SEG_CONFIG), '--shape', '64', '96', '--batch', '2', '--out', str(out), '--verify'])
    args = [SEG_CONFIG, '--impl', 'fast', '--batch', 2, '--shape', 64, 96, '--mode', 'infer', '--onnx', out,
            '--runtime', 'onnxruntime', 'openvino']
    if refused_in_process(lambda: run(args)):
        return
    output = run(args)
    assert f'# CPU {cpu_features().summary()}' in output.splitlines()
    assert re.search(rf'^# tensor mode in torch and {re.escape(str(out))} in onnxruntime [\d.]+, openvino \S+$',
                     output, re.M)
    # a fixed-size file: no image chunks
    assert f'# {out}: the whole batch a run (a fixed batch, or not one image an output row)' in output
    # the memory ratio is nan where the baseline's iterations added no peak to this process's
    table = re.findall(r'^\| ([^|]+?) \| infer \| ([\d.]+) \| [\d.]+ \| \d+ \| [\d.]+x \| (?:[\d.]+|nan)x \| \d+ '
                       r'\| (\S+) \|$', output, re.M)
    assert [label for label, _, _ in table] == ['fast', f'onnxruntime {out}', f'openvino f32 {out}'], output
    errors = {label: float(error) for label, _, error in table}
    # every row against torch's model of the config, which holds the weights the export holds (both drawn from
    # the same seed): the file in either runtime is float32 in another order, within --verify's own threshold
    # (pytorch2onnx.py); a graph compared with itself would show 0
    assert errors['fast'] == 0, errors
    assert 0 < errors[f'onnxruntime {out}'] <= pytorch2onnx.DEFAULT_TOLERANCE['f32'], errors
    assert 0 < errors[f'openvino f32 {out}'] <= pytorch2onnx.DEFAULT_TOLERANCE['f32'], errors


def test_a_configs_backbone_graph_is_timed_beside_that_backbone(run, tmp_path):
    """pytorch2onnx.py --backbone-only of a config, beside the config: the torch rows run its backbone with the
    export's weights, so the file's error is float32's rounding."""
    out = tmp_path / 'backbone.onnx'
    pytorch2onnx.main([str(SEG_CONFIG), '--backbone-only', '--shape', '64', '96', '--out', str(out)])
    output = run([SEG_CONFIG, '--impl', 'fast', '--shape', 64, 96, '--mode', 'infer', '--onnx', out])
    assert output.startswith(f"# {SEG_CONFIG}'s backbone: batch 1, input 64x96")
    errors = dict(re.findall(r'^\| ([^|]+?) \| infer \|.* (\S+) \|$', output, re.M))
    assert errors['fast'] == '0.0e+00', errors
    assert 0 < float(errors[f'onnxruntime {out}']) <= pytorch2onnx.DEFAULT_TOLERANCE['f32'], errors
