"""tools/analysis_tools/compile_report.py: dynamo's graphs of a backbone, the compile time and eager and
compiled seconds, as a user runs it (its checks of --amp, --options and --shape: tests/test_utils/test_amp.py,
tests/test_utils/test_compile_options.py)."""
import re
import runpy
import sys
from typing import List

import torch

from mmrmt.benchmark import models
from mmrmt.cpu_features import CPUFeatures
from tool_process import REPO, check_ok, run_tool

TOOL = 'analysis_tools/compile_report.py'
AMX = CPUFeatures('Intel(R) Xeon(R) Platinum 8480+', frozenset({'avx512f', 'avx512_bf16', 'amx_bf16'}))


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


def report_lines(monkeypatch, capsys, *args: str) -> List[str]:
    """What the tool prints, run in this process on a 32x32 ResT-Lite once with ``args``."""
    monkeypatch.setattr(sys, 'argv', [TOOL, '--backbone', 'rest-lite', '--shape', '32', '32', '--repeats', '1',
                                      *args])
    runpy.run_path(str(REPO / 'tools' / TOOL), run_name='__main__')
    return capsys.readouterr().out.splitlines()


def row_names(lines: List[str], count: int) -> List[str]:
    """The names of the last ``count`` timing rows."""
    return [line.split(' s, ')[0].rsplit(' ', 1)[0] for line in lines[-count:]]


def test_each_amp_is_a_row_pair_against_eager_float32(monkeypatch, capsys):
    """--amp none bf16: eager and compiled in float32 and in bf16 autocast, each ratio to eager float32."""
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: AMX)
    autocast_dtypes = []

    def record(model, **kwargs):
        def run(images):
            autocast_dtypes.append(torch.get_autocast_dtype('cpu') if torch.is_autocast_enabled('cpu') else None)
            return model(images)
        return run

    monkeypatch.setattr(torch, 'compile', record)
    lines = report_lines(monkeypatch, capsys, '--amp', 'none', 'bf16')
    assert ', amp none bf16, ' in lines[0]
    assert row_names(lines, 4) == ['eager none', 'compiled none', 'eager bf16', 'compiled bf16']
    assert all(line.endswith('x eager none (median of 1)') for line in lines[-3:])
    assert set(autocast_dtypes) == {None, torch.bfloat16}


def test_bf32_is_an_eager_row_with_onednn_in_bf16(monkeypatch, capsys):
    """--amp none bf32: eager and compiled float32, and eager BF32 (no compiled row: Inductor's cache does
    not key on the setting), the forward run with oneDNN's float32 GEMMs in bf16."""
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: AMX)
    seen = []
    monkeypatch.setattr(torch, 'compile', lambda model, **kwargs: model)
    build = models.build_backbone

    def recording_build(*args):
        model = build(*args)
        model.register_forward_pre_hook(lambda *_: seen.append(torch.backends.mkldnn.matmul.fp32_precision))
        return model

    monkeypatch.setattr(models, 'build_backbone', recording_build)
    lines = report_lines(monkeypatch, capsys, '--amp', 'none', 'bf32')
    assert row_names(lines, 3) == ['eager none', 'compiled none', 'eager bf32']
    assert 'bf16' in seen and torch.backends.mkldnn.matmul.fp32_precision != 'bf16'


def test_profile_prints_each_runs_top_operators(monkeypatch, capsys):
    """--profile 4: after the timing, a profiler table of each run, Inductor's kernels named (its option)."""
    options = []

    def record(model, **kwargs):
        options.append(kwargs['options'])
        return model

    monkeypatch.setattr(torch, 'compile', record)
    out = '\n'.join(report_lines(monkeypatch, capsys, '--profile', '4'))
    assert options == [{'cpp.enable_kernel_profile': True}]
    for name in ('eager', 'compiled'):
        table = out.split(f'## {name}: one iteration under torch.profiler\n')[1]
        assert 'Self CPU' in table.splitlines()[1] and 'aten::' in table


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
