"""tools/analysis_tools/compile_report.py: dynamo's graphs of a backbone, the compile time and eager and
compiled seconds, as a user runs it (the runs it reports for each option: tests/test_analysis_tools/
test_compile_report_rows.py)."""
import re

from tool_process import check_ok, run_tool

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
