import pytest

from zoo_configs import cached_external_config_paths


@pytest.fixture(scope='session', autouse=True)
def _cached_external_config_paths():
    with cached_external_config_paths():
        yield
