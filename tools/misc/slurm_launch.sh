#!/usr/bin/env bash
# The srun call behind tools/slurm_train.sh and tools/slurm_test.sh: one task a
# GPU, each running TOOL (train.py or test.py) with --launcher=slurm.
#   tools/misc/slurm_launch.sh TOOL PARTITION JOB_NAME [TOOL arguments]
# Environment: GPUS (tasks in all, default 8), GPUS_PER_NODE (default 8),
# CPUS_PER_TASK (default 5), SRUN_ARGS (more srun options, e.g. "--quotatype=auto"),
# PYTHON (default python). mmengine takes ranks and the master address from
# Slurm's variables; MASTER_PORT (default 29500) sets the port.
set -euo pipefail
TOOL=$1
PARTITION=$2
JOB_NAME=$3
shift 3
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
# word splitting of SRUN_ARGS is intended: it holds several options
# shellcheck disable=SC2086
exec srun -p "$PARTITION" \
    --job-name="$JOB_NAME" \
    --gres="gpu:$GPUS_PER_NODE" \
    --ntasks="$GPUS" \
    --ntasks-per-node="$GPUS_PER_NODE" \
    --cpus-per-task="$CPUS_PER_TASK" \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS:-} \
    "${PYTHON:-python}" -u "$(dirname "$0")/../$TOOL" "$@" --launcher=slurm
