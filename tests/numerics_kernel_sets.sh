#!/usr/bin/env bash
# Run the numerics tests (`pytest -m numerics`, see tests/conftest.py) once under
# each CPU kernel set this machine offers, so that a bound fitted to one
# instruction set shows up on any machine:
#   ATen's  (ATEN_CPU_CAPABILITY): default, avx2, avx512 where the CPU has them;
#   oneDNN's (ONEDNN_MAX_CPU_ISA): SSE41, AVX2, AVX512_CORE(_VNNI, _BF16), AVX10_1_512
#   (AVX-512 FP16) where it has them;
# and the default kernels on one thread and on every core (a reduction split over
# threads sums in another order).
# Usage: tests/numerics_kernel_sets.sh [PYTHON] [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python}
shift || true
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for flag in "$@"; do [[ $flags == *" $flag "* ]] || return 1; done; }

aten=(default)
onednn=(SSE41)
if has avx2 fma; then aten+=(avx2); onednn+=(AVX2); fi
if has avx512f avx512cd avx512dq avx512bw avx512vl; then
    aten+=(avx512); onednn+=(AVX512_CORE)
    if has avx512_vnni; then onednn+=(AVX512_CORE_VNNI); fi
    if has avx512_bf16; then onednn+=(AVX512_CORE_BF16); fi
    if has avx512_fp16; then onednn+=(AVX10_1_512); fi
fi

runs=()
for set in "${aten[@]}"; do runs+=("ATEN_CPU_CAPABILITY=$set OMP_NUM_THREADS=1"); done
for set in "${onednn[@]}"; do runs+=("ONEDNN_MAX_CPU_ISA=$set OMP_NUM_THREADS=1"); done
runs+=("OMP_NUM_THREADS=$(nproc)")

failed=()
for run in "${runs[@]}"; do
    echo "== $run"
    # shellcheck disable=SC2086  # $run is a list of VAR=value words
    env $run "$PY" -m pytest tests -q -m numerics -p no:cacheprovider "$@" || failed+=("$run")
done
if ((${#failed[@]})); then
    printf 'numerics tests failed under: %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "numerics tests passed under all ${#runs[@]} kernel sets and thread counts"
