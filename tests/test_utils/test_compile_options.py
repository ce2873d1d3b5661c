"""The Inductor options of --compile-options (tools/test.py, demo/image_demo.py, benchmark.py) and of
compile_report.py's --options: read by the tools' one KEY=VALUE reader, each value a scalar, judged by torch's
Inductor, each bad one a line naming it."""
import pytest
import torch

from mmrmt.utils import PreflightError
from mmrmt.utils.compiled_inference import check_compile, format_compile_options


def test_options_are_read_as_scalars_and_given_back_with_underscores(monkeypatch):
    from torch._inductor import cpp_builder
    monkeypatch.setattr(cpp_builder, 'get_cpp_compiler', lambda: 'g++')  # any machine: no compiler needed
    options = check_compile(True, ['freezing=True', 'layout-optimization=false', 'cpp.threads=1',
                                   'max_autotune_gemm_backends="CPP,ATEN"'], 'cpu')
    assert options == {'freezing': True, 'layout_optimization': False, 'cpp.threads': 1,
                       'max_autotune_gemm_backends': 'CPP,ATEN'}  # a text option with commas stays text
    assert format_compile_options(options) == ('freezing=True layout_optimization=False cpp.threads=1 '
                                               'max_autotune_gemm_backends=CPP,ATEN')


@pytest.mark.parametrize('pair, message', [
    ('freezing', "--options takes KEY=VALUE pairs, got 'freezing'; e.g. freezing=VALUE, one argument each (quote a "
                 'value with spaces)'),
    ('freezin=True', f"--options freezin: torch {torch.__version__} Inductor has no option 'freezin'; did you "
                     'mean freezing?'),
    ('freezing=3', '--options freezing: freezing takes a bool, got 3 (int)'),
])
def test_a_bad_option_is_one_line(pair, message):
    with pytest.raises(PreflightError) as error:
        check_compile(True, [pair], 'cpu', flag='--options')
    assert str(error.value) == message
