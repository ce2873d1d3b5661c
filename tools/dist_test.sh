#!/usr/bin/env bash
# Test with N processes on this machine (or NNODES machines) via torchrun.
#   tools/dist_test.sh CONFIG CHECKPOINT N [tools/test.py options]
# Without CUDA the processes run on the CPU over gloo. Environment:
# PYTHON (default python), NNODES, NODE_RANK, MASTER_ADDR, PORT.
set -euo pipefail
source "$(dirname "$0")/dist_args.sh"
ARGC=$#
CONFIG=${1-}
CHECKPOINT=${2-}
NPROC=${3-}
check_dist_args "tools/dist_test.sh CONFIG CHECKPOINT N [tools/test.py options]" 3 "$NPROC"
shift 3
exec "${PYTHON:-python}" -m torch.distributed.run \
    --nnodes="${NNODES:-1}" \
    --node_rank="${NODE_RANK:-0}" \
    --master_addr="${MASTER_ADDR:-127.0.0.1}" \
    --master_port="${PORT:-29500}" \
    --nproc_per_node="$NPROC" \
    "$(dirname "$0")/test.py" "$CONFIG" "$CHECKPOINT" --launcher pytorch "$@"
