"""The Makefile's targets as ``make -n`` prints them: setup, setup-forks and setup-floor hand
tools/misc/setup_env.sh their VENV (FAMILY=onedl for the forks' environment, TORCH and TORCHVISION for the
floor's); test-forks and test-floor run their tests in their environments; the floor is the one declared."""
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def make(*args: str) -> str:
    """What ``make ARGS`` prints (``-n``: what it would run; ``-p``: its database, nothing run);
    ``--no-print-directory``: under `make test` this make is a sub-make, which would announce its directory."""
    return subprocess.run(['make', '--no-print-directory', *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60).stdout.strip()


def makefile_variable(name: str) -> str:
    """The value the Makefile gives ``name``."""
    database = make('-pn', 'lint').splitlines()
    (value, ) = [line.split(' := ', 1)[1] for line in database if line.startswith(f'{name} := ')]
    return value


@pytest.mark.parametrize('target,venv,command', [
    ('setup', 'VENV=/tmp/my venv', "VENV='/tmp/my venv' bash tools/misc/setup_env.sh"),
    ('setup-forks', 'VENV_FORKS=/tmp/forks venv', "FAMILY=onedl VENV='/tmp/forks venv' bash tools/misc/setup_env.sh"),
    ('setup-floor', 'VENV_FLOOR=/tmp/floor venv', "TORCH={TORCH_FLOOR} TORCHVISION={TORCHVISION_FLOOR} "
     "VENV='/tmp/floor venv' bash tools/misc/setup_env.sh"),
])
def test_makefile_hands_setup_env_its_venv_and_family(target, venv, command):
    floor = {name: makefile_variable(name) for name in ('TORCH_FLOOR', 'TORCHVISION_FLOOR')} if 'FLOOR' in venv else {}
    assert make('-n', target, venv) == command.format(**floor)


def test_test_forks_and_test_floor_run_their_tests_in_their_environments():
    forks = make('-n', 'test-forks', 'VENV_FORKS=/tmp/forks').splitlines()[-1]
    assert forks.startswith('/tmp/forks/bin/python -m pytest tests ')
    assert forks.endswith(' --ignore=tests/test_deployment/test_mmdeploy')
    assert (REPO / 'tests' / 'test_deployment' / 'test_mmdeploy' / 'test_mmdeploy.py').is_file()
    floor_tests = makefile_variable('FLOOR_TESTS')
    assert make('-n', 'test-floor', 'VENV_FLOOR=/tmp/floor').splitlines()[-1].startswith(
        f'/tmp/floor/bin/python -m pytest {floor_tests} ')
    assert all((REPO / path).exists() for path in floor_tests.split())


def test_the_declared_torch_floor_is_the_one_make_test_floor_checks():
    """requirements/runtime.txt (which setup.py declares) names the torch and torchvision of make setup-floor."""
    runtime = (REPO / 'requirements' / 'runtime.txt').read_text().splitlines()
    assert f'torch>={makefile_variable("TORCH_FLOOR")}' in runtime
    assert f'torchvision>={makefile_variable("TORCHVISION_FLOOR")}' in runtime
