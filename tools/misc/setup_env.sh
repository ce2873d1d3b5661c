#!/usr/bin/env bash
# Build or reuse the project's virtual environment (idempotent): $VENV, which
# the Makefile passes (default .venv in the repository), on the OpenMMLab
# family $FAMILY: openmmlab (the default, what `make setup` builds) or onedl
# (the maintained forks, what `make setup-forks` builds).
#
#   torch $TORCH + torchvision $TORCHVISION: 2.14.1 and 0.29.1 unless both are
#       given (make setup-floor: the oldest torch requirements/runtime.txt names)
#   mmcv with compiled ops (openmmlab: mmcv 2.1.0; onedl: onedl-mmcv 2.3.6): a
#       matching wheel from $MMRMT_WHEELHOUSE or ~/.cache/mmrmt/wheels (found by
#       find_wheel.sh; an empty or half-written cache is skipped), else built
#       from the PyPI sdist and cached there. Wheels for torch 2.14.1 lie in
#       those folders themselves, wheels for another torch in their subfolder
#       torch-$TORCH (mmcv's ops only load into the torch they were built
#       against, and the wheels' file names do not say which)
#   mmrmt itself, editable, with its extras for the family (openmmlab: all, i.e.
#       mmdet 3.3.0, mmsegmentation 1.2.2 + ftfy, regex; onedl: onedl-all, i.e.
#       onedl-mmdetection 3.5.1, onedl-mmsegmentation 1.4.2), tests (pytest,
#       flake8, isort), deploy (onnx, onnxruntime, onnxscript) and openvino; with
#       them mmengine (onedl: onedl-mmengine 0.10.12) and timm
#   openmmlab only: mmdeploy 1.3.1 and aenum, without their dependencies
#       (requirements/mmdeploy.txt)
# and finally checks that mmcv.ops.nms runs; it remembers that in $VENV/.mmrmt-ready
# until pip changes the environment or requirements/ or setup.py change. Any failure ends it with one
# "[setup] error: ..." line naming the command that failed.
set -eEuo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${VENV:-$ROOT/.venv}
PYTHON=${PYTHON:-python3}
FAMILY=${FAMILY:-openmmlab}
DEFAULT_TORCH=2.14.1 DEFAULT_TORCHVISION=0.29.1
TORCH=${TORCH:-} TORCHVISION=${TORCHVISION:-}
CONSTRAINTS=$ROOT/requirements/constraints.txt
CACHE_WHEELHOUSE=${XDG_CACHE_HOME:-$HOME/.cache}/mmrmt/wheels
BUILD_DIR=

log() { printf '[setup] %s\n' "$*"; }
fail() { printf '[setup] error: %s\n' "$*" >&2; exit 1; }
report_failure() {
    # Subshells and command substitutions exit quietly; their caller reports.
    [ "$BASH_SUBSHELL" -eq 0 ] && printf '[setup] error: `%s` failed with status %s (line %s of %s)\n' \
        "$2" "$1" "$3" "$0" >&2
    exit "$1"
}
trap 'report_failure $? "$BASH_COMMAND" $LINENO' ERR
trap '[ -z "$BUILD_DIR" ] || rm -rf "$BUILD_DIR"' EXIT

# What differs between the families: mmcv's and mmengine's distributions, the
# libraries (checked by their distributions' versions), the extras, mmdeploy.
case $FAMILY in
    openmmlab)
        MMCV_DIST=mmcv MMCV_VERSION=2.1.0 MMENGINE_DIST=mmengine LIBRARIES_EXTRA=all
        LIBRARIES_OK="import importlib.metadata as m; assert (m.version('mmdet'), m.version('mmsegmentation')) == ('3.3.0', '1.2.2')"
        MMDEPLOY_OK="import aenum, importlib.metadata as m; assert m.version('mmdeploy') == '1.3.1'" ;;
    onedl)
        MMCV_DIST=onedl-mmcv MMCV_VERSION=2.3.6 MMENGINE_DIST=onedl-mmengine LIBRARIES_EXTRA=onedl-all
        LIBRARIES_OK="import importlib.metadata as m; assert (m.version('onedl-mmengine'), m.version('onedl-mmdetection'), m.version('onedl-mmsegmentation')) == ('0.10.12', '3.5.1', '1.4.2')"
        MMDEPLOY_OK=pass ;;  # no mmdeploy: the forks' suite leaves its tests out (the Makefile's FORKS_TESTS)
    *)
        printf "[setup] error: FAMILY must be openmmlab (upstream OpenMMLab) or onedl (its maintained forks), not '%s'\n" \
            "$FAMILY" >&2
        exit 1 ;;
esac

# Another torch than the default: both versions given, their own constraints
# (requirements/constraints.txt with its torch pins replaced) and wheel folders.
if [ -z "$TORCH$TORCHVISION" ]; then
    TORCH=$DEFAULT_TORCH TORCHVISION=$DEFAULT_TORCHVISION
elif [ -z "$TORCH" ] || [ -z "$TORCHVISION" ]; then
    fail "set TORCH and TORCHVISION together (e.g. TORCH=2.7.1 TORCHVISION=0.22.1), not only one of them"
fi
WHEEL_SUBDIR=
[ "$TORCH" = "$DEFAULT_TORCH" ] || WHEEL_SUBDIR=torch-$TORCH
WHEELS=$CACHE_WHEELHOUSE${WHEEL_SUBDIR:+/$WHEEL_SUBDIR}

command -v "$PYTHON" >/dev/null || fail "no Python interpreter '$PYTHON': install Python 3.11 or set PYTHON"
if [ ! -x "$VENV/bin/python" ]; then
    log "creating virtual environment $VENV"
    "$PYTHON" -m venv "$VENV"
fi
PY=$VENV/bin/python
PIP=("$PY" -m pip --disable-pip-version-check)
if [ -n "$WHEEL_SUBDIR" ]; then
    sed -e "s/^torch==.*/torch==$TORCH/" -e "s/^torchvision==.*/torchvision==$TORCHVISION/" \
        "$ROOT/requirements/constraints.txt" > "$VENV/.mmrmt-constraints.txt"
    CONSTRAINTS=$VENV/.mmrmt-constraints.txt
fi
PIP_INSTALL=("${PIP[@]}" install -c "$CONSTRAINTS")

has() { "$PY" -c "$1" >/dev/null 2>&1; }

# What each step below makes true, as Python statements that fail otherwise.
SETUPTOOLS_OK="import setuptools; assert (77, 0) <= tuple(int(p) for p in setuptools.__version__.split('.')[:2]) < (81, 0)"
TORCH_OK="import torch, torchvision; assert (torch.__version__.split('+')[0], torchvision.__version__.split('+')[0]) == ('$TORCH', '$TORCHVISION')"
MMCV_OK="import mmcv; from mmcv.ops import nms; assert mmcv.__version__ == '$MMCV_VERSION'"
PACKAGES_OK="import mmdet, mmseg, timm, pytest, xdist, flake8, isort, ftfy, regex, onnx, onnxruntime, onnxscript, openvino, mmrmt"
NMS_RUNS="
import torch
from mmcv.ops import nms

boxes = torch.tensor([[0., 0., 10., 10.], [1., 1., 10., 10.], [20., 20., 30., 30.]])
scores = torch.tensor([0.9, 0.8, 0.7])
assert nms(boxes, scores, iou_threshold=0.5)[1].tolist() == [0, 2]
print('cuda' if torch.cuda.is_available() else 'cpu')
"

# Reinstall the Python dependencies whenever their declarations change.
STAMP=$VENV/.mmrmt-requirements
wanted=$( (echo "$FAMILY $TORCH $TORCHVISION"; cat "$ROOT"/requirements/*.txt "$ROOT/setup.py") | sha256sum | cut -d' ' -f1)

# Checked before and nothing installed or removed since (pip changes site-packages' modification time).
READY=$VENV/.mmrmt-ready
ready_key() { printf '%s %s' "$wanted" "$(stat -c %Y "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')")"; }
if [ "$(cat "$READY" 2>/dev/null)" = "$(ready_key)" ]; then
    log "environment ready (as checked last, $(date -r "$READY" '+%F %T'); delete $READY to check again)"
    exit 0
fi

# Already set up: every check below at once, in one interpreter.
if [ "$(cat "$STAMP" 2>/dev/null)" = "$wanted" ] && device=$("$PY" -c "$SETUPTOOLS_OK
$TORCH_OK
$MMCV_OK
$PACKAGES_OK
$LIBRARIES_OK
$MMDEPLOY_OK
$NMS_RUNS" 2>/dev/null); then
    log "environment ready: mmcv.ops.nms runs on $device"
    ready_key > "$READY"
    exit 0
fi

if ! has "$SETUPTOOLS_OK"; then
    log "installing build tools"
    "${PIP_INSTALL[@]}" -q 'setuptools>=77,<81' wheel ninja
fi

if ! has "$TORCH_OK"; then
    log "installing torch $TORCH and torchvision $TORCHVISION"
    "${PIP_INSTALL[@]}" -q "torch==$TORCH" "torchvision==$TORCHVISION"
fi

mmcv_ok() { has "$MMCV_OK"; }

MMCV_WHEEL=${MMCV_DIST//-/_}-$MMCV_VERSION-$("$PY" -c 'import sys; print("cp%d%d-cp%d%d" % (sys.version_info[:2] * 2))')-linux_$(uname -m).whl

find_mmcv_wheel() {
    bash "$ROOT/tools/misc/find_wheel.sh" ${WHEEL_SUBDIR:+--under "$WHEEL_SUBDIR"} "$MMCV_WHEEL" \
        "${MMRMT_WHEELHOUSE:-}" "$CACHE_WHEELHOUSE"
}

build_mmcv_wheel() {
    BUILD_DIR=$(mktemp -d)
    local source
    log "building $MMCV_DIST $MMCV_VERSION from source (mmcv: about 15 minutes on 2 cores; onedl-mmcv: 25 on one)"
    "${PIP[@]}" download -q --no-deps --no-binary :all: "$MMCV_DIST==$MMCV_VERSION" -d "$BUILD_DIR"
    tar -xzf "$BUILD_DIR"/*.tar.gz -C "$BUILD_DIR"
    source=$(find "$BUILD_DIR" -mindepth 1 -maxdepth 1 -type d)
    # mmcv 2.1.0 asks for C++17, which torch 2.14's headers do not compile in: without it torch's
    # BuildExtension adds the standard of the installed torch (2.14: C++20; onedl-mmcv already asks for it).
    sed -i "s/'-std=c++17'//g" "$source/setup.py"
    # mmcv's own runtime dependencies, so the build can import what it needs.
    "${PIP_INSTALL[@]}" -q addict "$MMENGINE_DIST" numpy packaging Pillow pyyaml yapf opencv-python
    mkdir -p "$WHEELS"
    MMCV_WITH_OPS=1 FORCE_CUDA=0 MAX_JOBS=${MAX_JOBS:-2} \
        "${PIP[@]}" wheel -q --no-build-isolation --no-deps -w "$WHEELS" "$source"
    rm -rf "$BUILD_DIR"
    BUILD_DIR=
}

if ! mmcv_ok; then
    if wheel=$(find_mmcv_wheel); then
        log "installing mmcv from $wheel"
        "${PIP_INSTALL[@]}" "$wheel" || log "$wheel does not install here"
    else
        log "no $MMCV_WHEEL in ${MMRMT_WHEELHOUSE:+$MMRMT_WHEELHOUSE${WHEEL_SUBDIR:+/$WHEEL_SUBDIR} or }$WHEELS"
        wheel=
    fi
    if ! mmcv_ok; then
        if [ -n "$wheel" ]; then
            log "$wheel does not work here; building instead"
            "${PIP[@]}" uninstall -y -q "$MMCV_DIST" || true
        fi
        build_mmcv_wheel
        wheel=$(find_mmcv_wheel) || fail "the mmcv build wrote no $MMCV_WHEEL into $WHEELS"
        "${PIP_INSTALL[@]}" "$wheel"
        mmcv_ok || fail "mmcv built from source does not import with its ops (from mmcv.ops import nms)"
    fi
fi

if [ "$(cat "$STAMP" 2>/dev/null)" != "$wanted" ] || ! has "$PACKAGES_OK
$LIBRARIES_OK"; then
    log "installing mmdet, mmsegmentation, timm, pytest and mmrmt (editable; extras $LIBRARIES_EXTRA, tests, deploy, openvino)"
    "${PIP_INSTALL[@]}" -q --no-build-isolation -e "$ROOT[$LIBRARIES_EXTRA,tests,deploy,openvino]"
    echo "$wanted" > "$STAMP"
fi

# mmdeploy without its declared dependencies (see requirements/mmdeploy.txt).
if ! has "$MMDEPLOY_OK"; then
    log "installing mmdeploy 1.3.1 and aenum without their dependencies (requirements/mmdeploy.txt)"
    "${PIP_INSTALL[@]}" -q --no-deps -r "$ROOT/requirements/mmdeploy.txt"
fi

device=$("$PY" -c "$NMS_RUNS") || fail "mmcv.ops.nms does not run or gives wrong boxes"
log "environment ready: mmcv.ops.nms runs on $device"
ready_key > "$READY"
