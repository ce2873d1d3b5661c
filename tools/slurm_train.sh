#!/usr/bin/env bash
# Train on a Slurm cluster, one task a GPU (GPUS tasks in all, default 8).
#   tools/slurm_train.sh PARTITION JOB_NAME CONFIG WORK_DIR [tools/train.py options]
# Environment (GPUS, GPUS_PER_NODE, CPUS_PER_TASK, SRUN_ARGS, PYTHON,
# MASTER_PORT): see tools/misc/slurm_launch.sh.
set -euo pipefail
if [ $# -lt 4 ]; then
    echo "usage: $0 PARTITION JOB_NAME CONFIG WORK_DIR [tools/train.py options]" >&2
    exit 2
fi
exec "$(dirname "$0")/misc/slurm_launch.sh" train.py "$1" "$2" "$3" --work-dir="$4" "${@:5}"
