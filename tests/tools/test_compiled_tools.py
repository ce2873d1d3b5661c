"""``--compile`` in tools/test.py, demo/image_demo.py and benchmark.py: compiled outputs equal eager's
within float32's bound, and a second run in a fresh process takes Inductor's code from its on-disk cache
instead of compiling again (bad --compile-options are one line: tests/test_utils/test_compile_options.py).

Compiling is slow on a CPU (the tiny Mask R-CNN's backbone and neck: about 2 minutes on one thread, less
where Inductor's cache already holds some of its kernels), so the tools share one Inductor cache
(``TORCHINDUCTOR_CACHE_DIR``, a folder of this module) and only tools/test.py runs twice. The demo and the
benchmark compile graphs of their own: the test config's ``randomness=dict(deterministic=True)`` has
tools/test.py run with torch's deterministic algorithms, a setting the cache keys its graphs by. The
benchmark's error column of a compiled backbone is checked in tests/tools/test_benchmark.py (a backbone of
its own would compile for minutes more).
"""
import json
import pickle
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
import torch

from mmrmt.utils import read_config
from mmrmt.utils.model_from_config import build_cpu_model
from helpers.rounding import two_implementations
from helpers.runtime_bounds import layer_count, longest_reduction
from tool_process import DET_CONFIG, check_ok, det_data_options, run_tool

IMAGE_DEMO = '../demo/image_demo.py'  # run_tool runs scripts relative to tools/
BENCHMARK = 'analysis_tools/benchmark.py'
SUMMARY = re.compile(r"torch\.compile: (.+) compiled in ([\d.]+) s \((\d+) graphs; Inductor's code of (\d+) of "
                     r"(\d+) from its cache (\S+)\)")


@pytest.fixture(scope='module')
def inductor_cache(tmp_path_factory) -> Path:
    """This module's Inductor cache."""
    return tmp_path_factory.mktemp('inductor_cache')


def run_compiled(args: List[object], cache: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a tool (see tool_process.run_tool) in a fresh interpreter whose Inductor cache is ``cache``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('TORCHINDUCTOR_CACHE_DIR', str(cache))
        return run_tool(args, timeout, fresh=True)


def summary(output: str) -> Dict[str, object]:
    """The tool's torch.compile line: what it compiled, the graphs, Inductor's compilations and how many
    came from the cache; the line must be said once."""
    found = SUMMARY.findall(output)
    assert len(found) == 1, output[-3000:]
    what, _, graphs, cached, compilations, cache = found[0]
    return dict(what=what, graphs=int(graphs), cached=int(cached), compilations=int(compilations), cache=cache)


def det_tolerance() -> float:
    """Relative difference allowed between two float32 computations of the tiny Mask R-CNN (eager and
    compiled): its longest sum (a layer's, or an attention's over the first stage's 16x16 tokens of a
    64x64 image) over its layers (helpers.rounding.two_implementations)."""
    model = build_cpu_model(read_config(str(DET_CONFIG)), quiet=True)
    return two_implementations(torch.float32, max(longest_reduction(model), 16 * 16), layer_count(model))


def assert_same_detections(compiled: List[Dict[str, torch.Tensor]], eager: List[Dict[str, torch.Tensor]]) -> None:
    """Per image the same labels, and scores and boxes within :func:`det_tolerance` of eager's largest."""
    tolerance = det_tolerance()
    assert len(compiled) == len(eager)
    for ours, theirs in zip(compiled, eager):
        assert torch.equal(torch.as_tensor(ours['labels']), torch.as_tensor(theirs['labels']))
        for key in ('scores', 'bboxes'):
            expected = torch.as_tensor(theirs[key], dtype=torch.float32)
            scale = expected.abs().max().item() if expected.numel() else 0.
            torch.testing.assert_close(torch.as_tensor(ours[key], dtype=torch.float32), expected, rtol=tolerance,
                                       atol=tolerance * scale)


@pytest.fixture(scope='module')
def compiled_test_runs(inductor_cache, det_work_dir, demo_root, tmp_path_factory):
    """tools/test.py --compile on the 4-iteration detector, twice, each in a fresh interpreter: the first
    compiles, the second finds the code in the cache."""
    runs = []
    for index in range(2):
        folder = tmp_path_factory.mktemp(f'compiled_test_{index}')
        result = run_compiled(['test.py', DET_CONFIG, det_work_dir / 'iter_4.pth', '--work-dir', folder / 'work',
                               '--out', folder / 'predictions.pkl', '--compile', '--cfg-options',
                               *det_data_options(demo_root)], inductor_cache, timeout=900 if index == 0 else 300)
        check_ok(result)
        runs.append((result, folder / 'predictions.pkl'))
    return runs


def test_compiled_test_run_gives_eager_predictions(compiled_test_runs, det_test_run):
    (result, out), _ = compiled_test_runs
    compiled = [sample['pred_instances'] for sample in pickle.loads(out.read_bytes())]
    eager = [sample['pred_instances'] for sample in pickle.loads(det_test_run.out.read_bytes())]
    assert_same_detections(compiled, eager)
    said = summary(result.stdout + result.stderr)
    assert said['what'] == 'backbone and neck' and said['graphs'] >= 2 and said['compilations'] >= 2


def test_second_test_run_takes_the_compiled_code_from_the_cache(compiled_test_runs, inductor_cache):
    first, second = (summary(result.stdout + result.stderr) for result, _ in compiled_test_runs)
    assert first['cache'] == second['cache'] == str(inductor_cache)
    assert first['cached'] == 0  # the cache was empty
    assert second['compilations'] == first['compilations'] and second['cached'] == second['compilations']


def demo_predictions(out_dir: Path) -> List[Dict[str, torch.Tensor]]:
    return [json.loads(path.read_text()) for path in sorted((out_dir / 'preds').glob('*.json'))]


def test_compiled_demo_gives_eager_predictions(compiled_test_runs, inductor_cache, det_work_dir, demo_root,
                                               tmp_path):
    """The demo's detections, compiled, are eager's (its torch.compile line said once)."""
    images = tmp_path / 'images'
    images.mkdir()
    for image in sorted((demo_root / 'coco' / 'val').glob('*.jpg'))[:4]:
        shutil.copy(image, images)
    args = [IMAGE_DEMO, images, DET_CONFIG, '--weights', det_work_dir / 'iter_4.pth', '--device', 'cpu',
            '--batch-size', '4']
    eager = run_tool([*args, '--out-dir', tmp_path / 'eager'])
    compiled = run_compiled([*args, '--out-dir', tmp_path / 'compiled', '--compile'], inductor_cache)
    check_ok(eager)
    check_ok(compiled)
    assert_same_detections(demo_predictions(tmp_path / 'compiled'), demo_predictions(tmp_path / 'eager'))
    said = summary(compiled.stdout)
    assert said['what'] == 'backbone and neck' and said['compilations'] >= 2


def test_benchmark_has_compiled_rows_beside_eager_ones(compiled_test_runs, inductor_cache):
    result = run_compiled([BENCHMARK, DET_CONFIG, '--batch', '4', '--shape', '64', '64', '--mode', 'infer',
                           '--repeats', '1', '--warmup', '0', '--compile'], inductor_cache)
    check_ok(result)
    rows = re.findall(r'^\| (default(?: compiled)?) \| infer \| [\d.]+ \| [\d.]+ \| \d+ \| ([\d.]+)x \| [\d.]+x \| '
                      r'\d+ \| - \|$', result.stdout, re.M)
    assert [label for label, _ in rows] == ['default', 'default compiled'] and rows[0][1] == '1.00'
    assert summary(result.stdout)['compilations'] >= 2
    assert '# default compiled (infer): torch.compile: backbone and neck compiled in ' in result.stdout
