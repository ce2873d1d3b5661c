"""tools/analysis_tools/compile_report.py: dynamo's graphs of a backbone, the compile time and eager and
compiled seconds, as a user runs it; --amp bf16 refused in one line on a CPU without native bf16 (its checks of
--options and --shape: tests/test_benchmark/test_compile_options.py)."""
import re
import runpy
import sys

import torch

from mmrmt.cpu_features import CPUFeatures
from tool_process import REPO, check_ok, exit_message, run_tool

TOOL = 'analysis_tools/compile_report.py'


def test_report_of_a_small_backbone():
    result = run_tool([TOOL, '--backbone', 'rest-lite', '--shape', '32', '32', '--repeats', '1', '--threads', '1',
                       '--options', 'freezing=True', 'layout-optimization=false'])
    check_ok(result)
    lines = result.stdout.splitlines()
    assert lines[0].startswith('# rest-lite: batch 1, input 32x32, infer, amp none, threads 1, torch ')
    assert lines[0].endswith(', options freezing=True layout_optimization=False')
    graphs = re.fullmatch(r'graphs (\d+), graph breaks (\d+)', lines[1])
    assert graphs and int(graphs[1]) >= 1 and int(graphs[2]) == len(
        [line for line in lines if line.startswith('  break: ')])
    assert any(re.fullmatch(r'compiled: compile time -?\d+\.\d s \(first compiled iteration less an eager one\)',
                            line) for line in lines)
    assert re.fullmatch(r'eager \d+\.\d{3} s, peak \+\d+ MiB \(median of 1\)', lines[-2])
    assert re.fullmatch(r'compiled \d+\.\d{3} s, peak \+\d+ MiB: \d+\.\d{2}x eager \(median of 1\)', lines[-1])


def test_impls_are_each_compiled_against_the_first_ones_eager_run(monkeypatch, capsys):
    """--impls fast flex: RMT's fast form eager and compiled, its FlexAttention form compiled, in one run."""
    compiled = []

    def record(model, **kwargs):
        compiled.append(type(model.layers[0].blocks[0].retention).__name__)
        return model

    monkeypatch.setattr(torch, 'compile', record)
    monkeypatch.setattr(sys, 'argv', [TOOL, '--backbone', 'rmt-t', '--shape', '32', '32', '--repeats', '1',
                                      '--impls', 'fast', 'flex'])
    runpy.run_path(str(REPO / 'tools' / TOOL), run_name='__main__')
    assert compiled == ['FastManhattanSelfAttention', 'FlexManhattanSelfAttention']
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(', impls fast flex')
    assert [line.split(' s, ')[0].rsplit(' ', 1)[0] for line in lines[-3:]] == [
        'eager fast', 'compiled fast', 'compiled flex']
    assert lines[-1].endswith('x eager fast (median of 1)')


def test_options_reach_torch_compile(monkeypatch, capsys):
    calls = []

    def record(model, **kwargs):
        calls.append(kwargs)
        return model

    monkeypatch.setattr(torch, 'compile', record)
    monkeypatch.setattr(sys, 'argv', [TOOL, '--backbone', 'rest-lite', '--shape', '32', '32', '--repeats', '1',
                                      '--options', 'freezing=True', 'cpp.threads=1'])
    runpy.run_path(str(REPO / 'tools' / TOOL), run_name='__main__')
    assert calls == [dict(options=dict(freezing=True, **{'cpp.threads': 1}))]
    assert ', options freezing=True cpp.threads=1\n' in capsys.readouterr().out


def test_bf16_is_refused_on_a_cpu_without_native_bf16(monkeypatch, capsys):
    zen3 = CPUFeatures('AMD Ryzen 9 5950X 16-Core Processor', frozenset({'avx2', 'fma'}))
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: zen3)
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    message = exit_message(TOOL, ['--backbone', 'rmt-t', '--amp', 'bf16'], monkeypatch, capsys)
    assert message.startswith('error: --amp on the CPU: this CPU (AMD Ryzen 9 5950X 16-Core Processor) has no '
                              'AVX-512 BF16 or AMX')
