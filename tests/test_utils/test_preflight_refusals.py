"""check_device's one lines (moved from tests/tools/test_bad_inputs_probe.py): a name that is no device, a
device kind the tools do not run on, a CUDA device torch does not see."""
import pytest
import torch

from mmrmt.utils import PreflightError, check_device


@pytest.mark.parametrize('device,count,line', [
    ('gpu', 0, "--device 'gpu' is not a device this tool runs on: give 'cpu', 'cuda' or 'cuda:N'"),
    ('mps', 0, "--device 'mps' is not a device this tool runs on: give 'cpu', 'cuda' or 'cuda:N'"),
    ('cuda', 0, '--device cuda: torch sees no CUDA device here; use --device cpu'),
    ('cuda:99', 2, '--device cuda:99: torch sees 2 CUDA device(s), cuda:0 to cuda:1'),
])
def test_a_device_torch_cannot_run_on_is_one_line(device, count, line, monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: count > 0)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: count)
    check_device('cpu')
    with pytest.raises(PreflightError) as refused:
        check_device(device)
    assert str(refused.value) == line
