"""--compile (and compile_report.py) where Inductor cannot build its code (moved from
tests/tools/test_compiled_tools.py): one line naming what is missing, on the CPU (a C++ compiler) and on CUDA
(Triton); --compile-options without --compile."""
import pytest

from mmrmt.utils import PreflightError
from mmrmt.utils.compiled_inference import check_compile


def test_options_without_compile():
    with pytest.raises(PreflightError) as refused:
        check_compile(False, ['max_autotune=True'], 'cpu')
    assert str(refused.value) == '--compile-options set the options of --compile: add --compile'
    assert check_compile(False, [], 'cpu') is None


def test_no_cpp_compiler_for_the_cpu(monkeypatch):
    from torch._inductor import cpp_builder, exc

    def no_compiler():
        raise exc.InvalidCxxCompiler

    monkeypatch.setattr(cpp_builder, 'get_cpp_compiler', no_compiler)
    with pytest.raises(PreflightError) as refused:
        check_compile(True, [], 'cpu')
    assert str(refused.value) == ('torch.compile on the CPU: Inductor builds C++ and finds no compiler (g++ or the '
                                  'CXX of torch._inductor.config.cpp.cxx); install g++, or run without compiling')


def test_no_triton_for_cuda(monkeypatch):
    from torch.utils import _triton
    monkeypatch.setattr(_triton, 'has_triton', lambda: False)
    with pytest.raises(PreflightError) as refused:
        check_compile(True, ['freezing=True'], 'cuda')
    assert str(refused.value) == ('--compile on CUDA: Inductor generates Triton kernels and Triton is not installed '
                                  '(pip install triton), or run without --compile')


def test_compile_report_checks_for_a_compiler_before_it_runs(monkeypatch):
    from torch._inductor import cpp_builder, exc

    from helpers.tool_modules import import_tool

    def no_compiler():
        raise exc.InvalidCxxCompiler

    monkeypatch.setattr(cpp_builder, 'get_cpp_compiler', no_compiler)
    with pytest.raises(PreflightError, match=r'^torch.compile on the CPU: Inductor builds C\+\+ and finds no '):
        import_tool('tools/analysis_tools/compile_report.py').parse_args(['--backbone', 'rest-lite'])
