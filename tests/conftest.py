import sys
from pathlib import Path

import pytest

from mmrmt.datasets import make_demo_data

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))  # for the shared helpers package, tests/helpers


@pytest.fixture(scope='session')
def data_dir() -> Path:
    return TESTS / 'data'


@pytest.fixture(scope='session')
def demo_root(tmp_path_factory) -> Path:
    """The synthetic demo COCO and ADE20K sets, drawn once per test session."""
    root = tmp_path_factory.mktemp('demo_data')
    make_demo_data(str(root))
    return root
