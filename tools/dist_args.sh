# Sourced by tools/dist_train.sh and tools/dist_test.sh: their arguments, checked before torchrun starts.
# check_dist_args USAGE COUNT NPROC: one "error:" line and exit status 1 unless the script got COUNT
# arguments before its tool options and NPROC (the N of USAGE) is a whole number of at least 1.
check_dist_args() {
    local usage=$1 count=$2 nproc=$3
    if [ "$ARGC" -lt "$count" ]; then
        echo "error: too few arguments; usage: $usage" >&2
        exit 1
    fi
    if ! [[ $nproc =~ ^[1-9][0-9]*$ ]]; then
        echo "error: N, the number of processes a machine, must be a whole number of at least 1, got '$nproc'; usage: $usage" >&2
        exit 1
    fi
}
