import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))  # for the helper modules beside the tests


@pytest.fixture(scope='session')
def data_dir() -> Path:
    return TESTS / 'data'
