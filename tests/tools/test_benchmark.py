"""tools/analysis_tools/benchmark.py as a process: one run of its worker processes taking turns, and a run
where MMDetection cannot be imported. Its rows and header for each kind of contender (autocast, a whole model,
ResT, --onnx files) and a worker's failure, with the workers run in-process, are
tests/test_benchmark/test_rows.py's."""
import math
import os
import subprocess
import sys

from helpers.benchmark_table import rows
from tool_process import REPO, check_ok, run_tool, tool_env

TOOL = 'analysis_tools/benchmark.py'


def test_backbone_table_has_every_impl_and_mode_with_ratios_to_reference():
    result = run_tool([TOOL, '--backbone', 'rmt-t', '--impl', 'fast', 'reference', '--batch', '2',
                       '--shape', '64', '96', '--mode', 'infer', 'train', '--repeats', '1', '--warmup', '0'])
    check_ok(result)
    table = rows(result.stdout)
    assert set(table) == {(impl, mode) for impl in ('fast', 'reference') for mode in ('infer', 'train')}
    for (impl, mode), (seconds, images_per_second, peak_mb, speedup, memory, process_peak_mb) in table.items():
        # img/s = batch / seconds, up to the 3 printed decimals of seconds
        assert seconds > 0 and abs(images_per_second * seconds - 2) <= images_per_second * 5e-4 + 0.01
        # the process's peak holds the interpreter, the model and what the iterations added
        assert 0 <= peak_mb < process_peak_mb
        if impl == 'reference':
            assert speedup == 1.0 and (memory == 1.0 or math.isnan(memory))  # nan: the reference added no peak
    assert 'batch 2, input 64x96, cpu' in result.stdout


#: Put first on a process's path (and its workers', which inherit the environment):
#: MMDetection cannot be imported, as in a segmentation-only install.
WITHOUT_MMDET = """import sys
sys.modules['mmdet'] = None
"""


def test_backbones_build_with_only_mmsegmentation_installed(tmp_path):
    (tmp_path / 'sitecustomize.py').write_text(WITHOUT_MMDET)
    env = tool_env()
    env['PYTHONPATH'] = os.pathsep.join(filter(None, (str(tmp_path), env.get('PYTHONPATH'))))
    blocked = subprocess.run([sys.executable, '-c', 'import mmdet'], env=env, capture_output=True, text=True)
    assert blocked.returncode != 0 and 'ModuleNotFoundError' in blocked.stderr
    result = subprocess.run([sys.executable, str(REPO / 'tools' / TOOL), '--backbone', 'rest-lite', '--impl',
                             'fast', '--batch', '1', '--shape', '32', '32', '--mode', 'infer', '--repeats', '1',
                             '--warmup', '0'], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    check_ok(result)
    assert set(rows(result.stdout)) == {('fast', 'infer')}
