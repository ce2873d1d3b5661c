import os
import sys
from pathlib import Path
from typing import Iterator, Optional

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))  # for the shared helpers package, tests/helpers

#: Where the slow tests are (``make test-fast`` leaves them out): tools run in
#: subprocesses and train, every zoo config is built, models are exported and
#: the wheel is built. A slow test elsewhere carries ``@pytest.mark.slow``.
SLOW_PATHS = ('tools', 'configs', 'test_deployment', 'test_packaging.py')

#: The numerics tests: they compare floating-point results of two computations
#: (a fast and a reference form, a low precision and float64, our code and the
#: authors') within bounds derived from the format's unit roundoff and the size
#: of the computation (tests/helpers/rounding.py). ``make test-numerics`` runs
#: them under every CPU kernel set and thread count (tests/numerics_kernel_sets.sh).
NUMERICS_FILES = tuple(f'test_models/test_backbones/test_{name}.py' for name in (
    'autocast_precision', 'rmt_attention', 'rmt_attention_maps', 'rmt_ffn', 'rmt_masa_2d', 'rest_fast', 'resmlp',
    'upstream_golden')) + (
    'test_models/test_layers/test_norm_projection.py', 'test_models/test_layers/test_fused_attention.py',
    'test_deployment/test_export/test_query_runs.py',
    'test_models/test_classifiers/test_classifier_golden.py', 'test_deployment/test_export/test_export_forms.py',
    'test_cuda/test_cuda_backbones.py')


def pytest_configure(config) -> None:
    """In a pytest-xdist worker (``make test`` runs a process per core), torch computes on the worker's share
    of the cores, so that the workers do not contend for them."""
    workers = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1'))
    if workers > 1:
        import torch  # here: the xdist controller, which runs no test, starts the workers without it
        torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // workers))


@pytest.fixture(autouse=True)
def default_scope_of_each_test_its_own() -> Iterator[None]:
    """mmengine's scopes as they were before each test: a runner built in-process makes its default scope
    ('mmengine' unless its config names one) the process's current one, and later tests in the same process
    would look mmrmt's backbones up in mmengine's registry instead of mmdet's or mmseg's."""
    module = 'mmengine.registry.default_scope'  # not imported yet: no scope exists
    saved = dict(sys.modules[module].DefaultScope._instance_dict) if module in sys.modules else {}
    yield
    if module in sys.modules:
        scopes = sys.modules[module].DefaultScope
        scopes._instance_dict = type(scopes._instance_dict)(saved)


def pytest_ignore_collect(collection_path: Path, config) -> Optional[bool]:
    """Under ``-m "not slow"`` (``make test-fast``) the files under :data:`SLOW_PATHS`, all of whose
    tests are slow, are not even imported (their imports, of onnx, openvino and the tools' helpers,
    cost seconds); the tests selected are the same."""
    if config.getoption('markexpr') != 'not slow' or not collection_path.is_relative_to(TESTS):
        return None
    parts = collection_path.relative_to(TESTS).parts
    return True if parts and parts[0] in SLOW_PATHS else None


def pytest_collection_modifyitems(items) -> None:
    """Mark the tests under :data:`SLOW_PATHS` as ``slow``, those of :data:`NUMERICS_FILES` as ``numerics``."""
    for item in items:
        path = Path(item.fspath).relative_to(TESTS)
        if path.parts[0] in SLOW_PATHS:
            item.add_marker(pytest.mark.slow)
        if path.as_posix() in NUMERICS_FILES:
            item.add_marker(pytest.mark.numerics)


@pytest.fixture(scope='session')
def data_dir() -> Path:
    return TESTS / 'data'


@pytest.fixture(scope='session')
def demo_root(tmp_path_factory) -> Path:
    """The synthetic demo COCO and ADE20K sets, drawn once per test session."""
    from mmrmt.datasets import make_demo_data
    root = tmp_path_factory.mktemp('demo_data')
    make_demo_data(str(root))
    return root


@pytest.fixture
def read_only_folder(tmp_path, monkeypatch) -> Iterator[Path]:
    """An empty folder the test may fill and then ``chmod(0o555)`` (given back 0755 after it). Root writes into any
    folder whatever its mode, so under root ``os.access`` answers for this folder by its mode bits."""
    folder = tmp_path / 'read_only'
    folder.mkdir()
    if os.geteuid() == 0:
        real_access = os.access

        def access(path, mode: int, **kwargs) -> bool:
            if mode & os.W_OK and os.path.realpath(path) == str(folder.resolve()):
                return bool(folder.stat().st_mode & 0o200) and real_access(path, mode, **kwargs)
            return real_access(path, mode, **kwargs)

        monkeypatch.setattr(os, 'access', access)
    yield folder
    folder.chmod(0o755)
