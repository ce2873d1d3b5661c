"""tools/analysis_tools/compile_report.py in-process, torch.compile replaced by a recorder (no compilation): which
runs it reports for --impls, --amp, --profile and --options (the tool as a process, compiling: tests/tools/
test_compile_report.py; its checks of --amp, --options and --shape: tests/test_utils/test_amp.py,
tests/test_utils/test_compile_options.py)."""
from typing import List

import pytest
import torch

from mmrmt.cpu_features import CPUFeatures
from helpers.tool_modules import import_tool

compile_report = import_tool('tools/analysis_tools/compile_report.py')
pytestmark = pytest.mark.slow  # dynamo traces each backbone (torch._dynamo.explain)
AMX = CPUFeatures('Intel(R) Xeon(R) Platinum 8480+', frozenset({'avx512f', 'avx512_bf16', 'amx_bf16'}))


@pytest.fixture
def compiled(monkeypatch) -> list:
    """The (model, keyword arguments) torch.compile is called with, in order; it returns the model itself."""
    calls = []

    def record(model, **kwargs):
        calls.append((model, kwargs))
        return model

    monkeypatch.setattr(torch, 'compile', record)
    return calls


def report_lines(capsys, *args: str) -> List[str]:
    """What the tool prints, run once on a 32x32 input with ``args`` (ResT-Lite unless they name a backbone)."""
    backbone = [] if '--backbone' in args else ['--backbone', 'rest-lite']
    compile_report.main([*backbone, '--shape', '32', '32', '--repeats', '1', *args])
    return capsys.readouterr().out.splitlines()


def row_names(lines: List[str], count: int) -> List[str]:
    """The names of the last ``count`` timing rows."""
    return [line.split(' s, ')[0].rsplit(' ', 1)[0] for line in lines[-count:]]


def test_impls_are_each_compiled_against_the_first_ones_eager_run(compiled, capsys):
    """--impls fast flex: RMT's fast form eager and compiled, its FlexAttention form compiled, in one run."""
    lines = report_lines(capsys, '--backbone', 'rmt-t', '--impls', 'fast', 'flex')
    assert [type(model.layers[0].blocks[0].retention).__name__ for model, _ in compiled] == [
        'FastManhattanSelfAttention', 'FlexManhattanSelfAttention']
    assert lines[0].endswith(', impls fast flex')
    assert row_names(lines, 3) == ['eager fast', 'compiled fast', 'compiled flex']
    assert lines[-1].endswith('x eager fast (median of 1)')


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
    lines = report_lines(capsys, '--amp', 'none', 'bf16')
    assert ', amp none bf16, ' in lines[0]
    assert row_names(lines, 4) == ['eager none', 'compiled none', 'eager bf16', 'compiled bf16']
    assert all(line.endswith('x eager none (median of 1)') for line in lines[-3:])
    assert set(autocast_dtypes) == {None, torch.bfloat16}


def test_bf32_is_an_eager_row_with_onednn_in_bf16(compiled, monkeypatch, capsys):
    """--amp none bf32: eager and compiled float32, and eager BF32 (no compiled row: Inductor's cache does
    not key on the setting), the forward run with oneDNN's float32 GEMMs in bf16."""
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: AMX)
    seen = []
    build = compile_report.build_backbone

    def recording_build(*args):
        model = build(*args)
        model.register_forward_pre_hook(lambda *_: seen.append(torch.backends.mkldnn.matmul.fp32_precision))
        return model

    monkeypatch.setattr(compile_report, 'build_backbone', recording_build)
    lines = report_lines(capsys, '--amp', 'none', 'bf32')
    assert row_names(lines, 3) == ['eager none', 'compiled none', 'eager bf32']
    assert 'bf16' in seen and torch.backends.mkldnn.matmul.fp32_precision != 'bf16'


def test_profile_prints_each_runs_top_operators(compiled, capsys):
    """--profile 4: after the timing, a profiler table of each run, Inductor's kernels named (its option)."""
    out = '\n'.join(report_lines(capsys, '--profile', '4'))
    assert [kwargs['options'] for _, kwargs in compiled] == [{'cpp.enable_kernel_profile': True}]
    for name in ('eager', 'compiled'):
        table = out.split(f'## {name}: one iteration under torch.profiler\n')[1]
        assert 'Self CPU' in table.splitlines()[1] and 'aten::' in table


def test_options_reach_torch_compile(compiled, capsys):
    lines = report_lines(capsys, '--options', 'freezing=True', 'cpp.threads=1')
    assert [kwargs for _, kwargs in compiled] == [dict(options=dict(freezing=True, **{'cpp.threads': 1}))]
    assert lines[0].endswith(', options freezing=True cpp.threads=1')
