"""mmrmt.utils.amp: ``--amp`` (autocast) and ``--amp bf32`` checked in one line before anything is built, and
the block demo/image_demo.py runs the model in."""
import pytest
import torch

from mmrmt.cpu_features import CPUFeatures
from mmrmt.utils import PreflightError
from mmrmt.utils.amp import check_amp
from helpers.tool_modules import import_tool

ZEN3 = CPUFeatures('AMD Ryzen 9 5950X 16-Core Processor', frozenset({'avx', 'avx2', 'fma'}))
AMX = CPUFeatures('Intel(R) Xeon(R) Platinum 8480+', frozenset({'avx512f', 'avx512_bf16', 'amx_bf16'}))


@pytest.mark.parametrize('amp', ['autocast', 'bf32'])
def test_refused_on_a_cpu_without_native_bf16(amp, monkeypatch):
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: ZEN3)
    with pytest.raises(PreflightError, match=r'^--amp on the CPU: this CPU \(AMD Ryzen 9 5950X 16-Core Processor\) '
                                             'has no AVX-512 BF16 or AMX'):
        check_amp(amp, 'cpu')


@pytest.mark.parametrize('amp, device_type, compile, message', [
    ('bf32', 'cuda', False, "--amp bf32 sets oneDNN's CPU GEMMs; on CUDA give --amp (float16 autocast)"),
    ('bf32', 'cpu', True, '--amp bf32 with --compile: Inductor neither keys its cached graphs on bf32 nor gains '
                          'from it (docs/benchmark.md); give --amp (bf16 autocast) with --compile'),
])
def test_bf32_where_it_does_not_apply_is_one_line(amp, device_type, compile, message, monkeypatch):
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: AMX)
    with pytest.raises(PreflightError) as error:
        check_amp(amp, device_type, compile)
    assert str(error.value) == message


@pytest.mark.parametrize('amp, compile', [(None, True), ('autocast', True), ('bf32', False)])
def test_accepted_on_a_cpu_with_native_bf16(amp, compile, monkeypatch):
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: AMX)
    check_amp(amp, 'cpu', compile)


def test_each_precision_runs_the_model_as_it_says(monkeypatch):
    """Autocast: bf16 outputs of a Linear; bf32: float32 outputs, oneDNN's GEMMs set to bf16 within."""
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: AMX)
    amp_autocast = import_tool('demo/image_demo.py').amp_autocast
    model = torch.nn.Linear(4, 4)
    with amp_autocast(model, 'cpu', 'autocast') as inside:
        assert inside(torch.ones(2, 4)).dtype == torch.bfloat16
    with amp_autocast(model, 'cpu', 'bf32') as inside:
        assert inside(torch.ones(2, 4)).dtype == torch.float32
        assert torch.backends.mkldnn.matmul.fp32_precision == torch.backends.mkldnn.conv.fp32_precision == 'bf16'
    assert torch.backends.mkldnn.matmul.fp32_precision != 'bf16'
