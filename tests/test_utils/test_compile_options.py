"""compile_report.py's --options (parse_compile_options): Inductor options read as mmengine reads a scalar and
judged by torch's Inductor, each bad one a line naming it."""
import pytest
import torch

from mmrmt.utils import PreflightError
from mmrmt.utils.compiled_inference import format_compile_options, parse_compile_options


def test_options_are_read_as_scalars_and_given_back_with_underscores():
    options = parse_compile_options(['freezing=True', 'layout-optimization=false', 'cpp.threads=1'])
    assert options == {'freezing': True, 'layout_optimization': False, 'cpp.threads': 1}
    assert format_compile_options(options) == 'freezing=True layout_optimization=False cpp.threads=1'


@pytest.mark.parametrize('pair, message', [
    ('freezing', '--options freezing: give KEY=VALUE, e.g. freezing=True'),
    ('freezin=True', f"--options freezin=True: torch {torch.__version__} Inductor has no option 'freezin'; did you "
                     'mean freezing?'),
    ('freezing=3', '--options freezing=3: freezing takes a bool, got 3 (int)'),
])
def test_a_bad_option_is_one_line(pair, message):
    with pytest.raises(PreflightError) as error:
        parse_compile_options([pair])
    assert str(error.value) == message
