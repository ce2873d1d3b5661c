"""--amp of tools/train.py, tools/test.py, demo/image_demo.py and tools/misc/demo.py on a CPU without native bf16
(a Zen 3's flags, faked): one line refusing it before anything is written, in-process; --amp bf32 of the inference
tools likewise (the line itself: tests/test_utils/test_amp.py; --amp runs on a bf16 CPU: tests/tools/
test_amp_tools.py)."""
import sys

import pytest
import torch

from mmrmt.cpu_features import CPUFeatures
from helpers.tiny_configs import DET_CONFIG
from helpers.tool_modules import exit_line, import_tool

ZEN3 = CPUFeatures('AMD Ryzen 9 5950X 16-Core Processor', frozenset({'avx', 'avx2', 'fma'}))
REFUSAL = ("error: --amp on the CPU: this CPU (AMD Ryzen 9 5950X 16-Core Processor) has no AVX-512 BF16 or AMX, "
           "where torch's bf16 autocast is emulated and slower than float32; run without --amp (or on a CUDA "
           'device)')


@pytest.mark.parametrize('tool,args,amps', [
    ('tools/train.py', [DET_CONFIG, '--work-dir'], [[]]),
    ('tools/test.py', [DET_CONFIG, 'missing.pth', '--work-dir'], [[], ['bf32']]),
    ('demo/image_demo.py', ['image.jpg', DET_CONFIG, '--device', 'cpu', '--out-dir'], [[], ['bf32']]),
    ('tools/misc/demo.py', ['--work-dir'], [[]]),
])
def test_amp_is_refused_on_a_cpu_without_native_bf16(tool, args, amps, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr('mmrmt.utils.amp.cpu_features', lambda: ZEN3)
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    main, threads = import_tool(tool).main, torch.get_num_threads()  # main reads sys.argv, as its script does
    for amp in amps:
        monkeypatch.setattr(sys, 'argv', [tool, *map(str, args), str(tmp_path / 'w'), '--amp', *amp])
        assert exit_line(lambda _: main(), []) == REFUSAL
        assert capsys.readouterr() == ('', '')
    assert not (tmp_path / 'w').exists()
    torch.set_num_threads(threads)  # tools/misc/demo.py sets its --threads before refusing
