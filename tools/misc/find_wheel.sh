#!/usr/bin/env bash
# Print the path of the first complete wheel named WHEEL in the given folders
# (with --under SUB: in their subfolders SUB).
#
#   tools/misc/find_wheel.sh [--under SUB] WHEEL [DIR ...]
#
# Used by setup_env.sh to find the mmcv wheel: for torch 2.14.1 in the
# folders themselves, for another torch under torch-VERSION (its wheel has the
# same name but loads only into that torch). Folders that are empty strings,
# missing, empty, or hold only other files are skipped, and so is a wheel
# that is not a whole zip archive (an interrupted copy or build leaves one).
# Paths may contain spaces. Exits with status 1, printing nothing, when no
# folder holds the wheel.
set -uo pipefail

under=
if [ "${1:-}" = --under ]; then
    under=/$2
    shift 2
fi
wheel=$1
shift
for dir in "$@"; do
    candidate=$dir$under/$wheel
    [ -n "$dir" ] && [ -f "$candidate" ] || continue
    if "${PYTHON:-python3}" -c 'import sys, zipfile; sys.exit(not zipfile.is_zipfile(sys.argv[1]))' \
        "$candidate"; then
        printf '%s\n' "$candidate"
        exit 0
    fi
done
exit 1
