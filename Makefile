# mmrmt developer entry points.
#   make setup  build or reuse $(VENV) (torch, mmcv with ops, mmdet, mmseg, timm, mmrmt)
#   make lint   flake8 and isort --check-only over every Python file (settings in setup.cfg)
#   make test   lint, then the test suite (what CI runs), a process per core
#   make test-fast  the unit tests alone (`-m "not slow"`, see tests/conftest.py), for development
#   make test-numerics  the numerics tests under each CPU kernel set and thread count (tests/numerics_kernel_sets.sh)
#   make demo   the main job (see README)
#   make setup-forks  build or reuse $(VENV_FORKS) on the maintained onedl forks of OpenMMLab
#               (onedl-mmcv 2.3.6 with ops, onedl-mmengine 0.10.12, onedl-mmdetection 3.5.1,
#               onedl-mmsegmentation 1.4.2; FAMILY=onedl of tools/misc/setup_env.sh)
#   make test-forks   the suite there, but for $(FORKS_LEFT_OUT) (a check before a release; not in CI)
#   make setup-floor  build or reuse $(VENV_FLOOR) on the oldest torch requirements/runtime.txt declares
#               (torch $(TORCH_FLOOR), torchvision $(TORCHVISION_FLOOR); mmcv 2.1.0 built against it
#               once, ~15 minutes, cached in ~/.cache/mmrmt/wheels/torch-$(TORCH_FLOOR))
#   make test-floor   $(FLOOR_TESTS) there (a check before a release; not in CI)
VENV ?= .venv
PY := $(VENV)/bin/python
VENV_FORKS ?= .venv-onedl
PY_FORKS := $(VENV_FORKS)/bin/python
# what the forks' suite leaves out: mmdeploy's tests (upstream mmdeploy 1.3.1 is built for upstream
# mmcv and mmengine; the forks' environment has no mmdeploy)
FORKS_LEFT_OUT := tests/test_deployment/test_mmdeploy
VENV_FLOOR ?= .venv-floor
PY_FLOOR := $(VENV_FLOOR)/bin/python
# the torch floor (requirements/runtime.txt's torch>=, setup.py reads it; tests/test_packaging checks they agree)
TORCH_FLOOR := 2.7.1
TORCHVISION_FLOOR := 0.22.1
# what the floor must pass: the models (every fast path and run mode), checkpoint loading and the exports
FLOOR_TESTS := tests/test_models tests/test_checkpoint tests/test_deployment/test_export

.PHONY: setup lint test test-fast test-numerics demo setup-forks test-forks setup-floor test-floor

setup:
	VENV='$(VENV)' bash tools/misc/setup_env.sh

setup-forks:
	FAMILY=onedl VENV='$(VENV_FORKS)' bash tools/misc/setup_env.sh

setup-floor:
	TORCH=$(TORCH_FLOOR) TORCHVISION=$(TORCHVISION_FLOOR) VENV='$(VENV_FLOOR)' bash tools/misc/setup_env.sh

lint: setup
	$(PY) -m flake8 .
	$(PY) -m isort --check-only --diff .

# a process per core (pytest-xdist), each test file on one of them (its module fixtures made once); a worker
# that crashes ends the run, naming its test (xdist would replace it and, under loadfile, can then hang)
PYTEST_PARALLEL := -n auto --dist loadfile --max-worker-restart=0

test: setup lint
	$(PY) -m pytest tests -q $(PYTEST_PARALLEL) --durations=15

test-fast: setup
	$(PY) -m pytest tests -q $(PYTEST_PARALLEL) -m "not slow"

test-forks: setup-forks
	$(PY_FORKS) -m pytest tests -q $(PYTEST_PARALLEL) $(addprefix --ignore=,$(FORKS_LEFT_OUT))

test-floor: setup-floor
	$(PY_FLOOR) -m pytest $(FLOOR_TESTS) -q $(PYTEST_PARALLEL)

test-numerics: setup
	bash tests/numerics_kernel_sets.sh $(PY)

demo: setup
	$(PY) tools/misc/demo.py
