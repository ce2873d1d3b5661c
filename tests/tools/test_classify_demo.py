"""demo/classify_demo.py as a user runs it (its classes, transform and refusals: tests/test_demo/
test_classify_top_classes.py)."""
from helpers.images import blank_png
from tool_process import REPO, run_script


def test_the_script_ends_a_bomb_in_one_line(tmp_path):
    bomb = blank_png(tmp_path / 'bomb.png', 20000, 20000)
    result = run_script(REPO / 'demo' / 'classify_demo.py', [bomb, '--model', 'rest_lite', '--weights', 'w.pth'])
    assert result.returncode == 1 and result.stdout == ''
    assert result.stderr.splitlines() == [f'error: {bomb} is 20000x20000 pixels, more than the demo takes '
                                          '(67,108,864 pixels, e.g. 8192x8192); shrink it first']
