# mmrmt developer entry points.
#   make setup  build or reuse $(VENV) (torch, mmcv with ops, mmdet, mmseg, timm, mmrmt)
#   make test   run the test suite
#   make demo   the main job (see README)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup test demo

setup:
	VENV='$(VENV)' bash tools/misc/setup_env.sh

test: setup
	$(PY) -m pytest tests -q

demo: setup
	$(PY) tools/misc/demo.py
