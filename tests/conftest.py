import sys
from pathlib import Path

import pytest

from mmrmt.datasets import make_demo_data

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))  # for the shared helpers package, tests/helpers

#: Where the slow tests are (``make test-fast`` leaves them out): tools run in
#: subprocesses and train, every zoo config is built, models are exported and
#: the wheel is built. A slow test elsewhere carries ``@pytest.mark.slow``.
SLOW_PATHS = ('tools', 'configs', 'test_deployment', 'test_packaging.py')


def pytest_collection_modifyitems(items) -> None:
    """Mark the tests under :data:`SLOW_PATHS` as ``slow``."""
    for item in items:
        if Path(item.fspath).relative_to(TESTS).parts[0] in SLOW_PATHS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope='session')
def data_dir() -> Path:
    return TESTS / 'data'


@pytest.fixture(scope='session')
def demo_root(tmp_path_factory) -> Path:
    """The synthetic demo COCO and ADE20K sets, drawn once per test session."""
    root = tmp_path_factory.mktemp('demo_data')
    make_demo_data(str(root))
    return root
