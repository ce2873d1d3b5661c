from pathlib import Path

import pytest
from zoo_configs import cached_external_config_paths

from mmrmt.datasets import make_demo_data


@pytest.fixture(scope='session', autouse=True)
def _cached_external_config_paths():
    with cached_external_config_paths():
        yield


@pytest.fixture(scope='session')
def demo_data_root(tmp_path_factory) -> Path:
    """The synthetic demo COCO and ADE20K sets, drawn once per session."""
    root = tmp_path_factory.mktemp('demo_data')
    make_demo_data(str(root))
    return root
