# mmrmt developer entry points.
#   make setup  build or reuse $(VENV) (torch, mmcv with ops, mmdet, mmseg, timm, mmrmt)
#   make lint   flake8 and isort --check-only over every Python file (settings in setup.cfg)
#   make test   lint, then the test suite (what CI runs), a process per core
#   make test-fast  the unit tests alone (`-m "not slow"`, see tests/conftest.py), for development
#   make test-numerics  the numerics tests under each CPU kernel set and thread count (tests/numerics_kernel_sets.sh)
#   make demo   the main job (see README)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup lint test test-fast test-numerics demo

setup:
	VENV='$(VENV)' bash tools/misc/setup_env.sh

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

test-numerics: setup
	bash tests/numerics_kernel_sets.sh $(PY)

demo: setup
	$(PY) tools/misc/demo.py
