#!/usr/bin/env bash
# One command for a machine with a CUDA GPU: runs the CUDA-marked tests
# (backbone contract, fast vs reference RMT, float16/bfloat16 autocast,
# mixed-precision training steps of a tiny detector and segmentor), then
# times RMT-T and RMT-S training and inference with the fast and reference
# attention in float32, float16 and bfloat16 autocast, and prints one table.
#
#   bash tools/misc/gpu_check.sh            # from the repository root
#
# Environment: PYTHON (default python), BATCH (2), SHAPE ("800 1216", a
# detection-sized input), REPEATS (5 timed iterations after 2 warm-up ones).
# Tests first: a failing test stops the script before any timing.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
BATCH=${BATCH:-2}
SHAPE=${SHAPE:-800 1216}
REPEATS=${REPEATS:-5}

if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "error: torch sees no CUDA device; run tools/misc/gpu_check.sh on a machine with one" >&2
    exit 1
fi

echo "## CUDA tests"
"$PYTHON" -m pytest -m cuda -q -p no:cacheprovider tests

echo
echo "## RMT backbones on $("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name())'):" \
     "batch $BATCH, input ${SHAPE/ /x}, $REPEATS timed iterations, ratios against the reference path"
echo "| backbone | autocast | impl | mode | median s | img/s | peak MB | speed-up | memory |"
echo "|---|---|---|---|---|---|---|---|---|"
for backbone in rmt-t rmt-s; do
    for amp in none fp16 bf16; do
        # shellcheck disable=SC2086  # SHAPE is two numbers
        "$PYTHON" tools/analysis_tools/benchmark.py --backbone "$backbone" --impl fast reference \
            --device cuda --amp "$amp" --batch "$BATCH" --shape $SHAPE --repeats "$REPEATS" --warmup 2 \
            | grep -E '^\| (fast|reference) ' | sed "s/^|/| $backbone | ${amp/none/fp32} |/"
    done
done
