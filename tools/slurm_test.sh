#!/usr/bin/env bash
# Test a checkpoint on a Slurm cluster, one task a GPU (GPUS tasks in all, default 8).
#   tools/slurm_test.sh PARTITION JOB_NAME CONFIG CHECKPOINT [tools/test.py options]
# Environment (GPUS, GPUS_PER_NODE, CPUS_PER_TASK, SRUN_ARGS, PYTHON,
# MASTER_PORT): see tools/misc/slurm_launch.sh.
set -euo pipefail
if [ $# -lt 4 ]; then
    echo "usage: $0 PARTITION JOB_NAME CONFIG CHECKPOINT [tools/test.py options]" >&2
    exit 2
fi
exec "$(dirname "$0")/misc/slurm_launch.sh" test.py "$1" "$2" "$3" "$4" "${@:5}"
