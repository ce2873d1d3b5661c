#!/usr/bin/env bash
# Train with N processes on this machine (or NNODES machines) via torchrun.
#   tools/dist_train.sh CONFIG N [tools/train.py options]
# Without CUDA the processes train on the CPU over gloo. Environment:
# PYTHON (default python), NNODES, NODE_RANK, MASTER_ADDR, PORT.
set -euo pipefail
source "$(dirname "$0")/dist_args.sh"
ARGC=$#
CONFIG=${1-}
NPROC=${2-}
check_dist_args "tools/dist_train.sh CONFIG N [tools/train.py options]" 2 "$NPROC"
shift 2
exec "${PYTHON:-python}" -m torch.distributed.run \
    --nnodes="${NNODES:-1}" \
    --node_rank="${NODE_RANK:-0}" \
    --master_addr="${MASTER_ADDR:-127.0.0.1}" \
    --master_port="${PORT:-29500}" \
    --nproc_per_node="$NPROC" \
    "$(dirname "$0")/train.py" "$CONFIG" --launcher pytorch "$@"
