"""tools/analysis_tools/get_flops.py as a user runs it (its counts: tests/test_analysis_tools/test_flop_count.py)."""
from tool_process import REPO, check_ok, run_tool


def test_segmentor_count_from_the_command_line():
    result = run_tool(['analysis_tools/get_flops.py', REPO / 'configs/rmt/fpn_rmt-t_8xb2-80k_ade20k-512x512.py',
                       '--shape', '64'])
    check_ok(result)
    out = result.stdout
    assert 'input 1x3x64x64' in out and 'params: 17.03 M' in out and 'in products of two activations' in out
