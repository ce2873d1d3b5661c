#!/usr/bin/env bash
# Run the numerics tests (`pytest -m numerics`, see tests/conftest.py) once under
# each CPU kernel set this machine offers, so that a bound fitted to one
# instruction set shows up on any machine:
#   ATen's  (ATEN_CPU_CAPABILITY): default, avx2, avx512 where the CPU has them;
#   oneDNN's (ONEDNN_MAX_CPU_ISA): SSE41, AVX2, AVX512_CORE(_VNNI, _BF16), AVX10_1_512
#   (AVX-512 FP16), AVX10_1_512_AMX (AMX int8 and bf16 tiles) and AVX10_1_512_AMX_FP16
#   (AMX float16 tiles too) where it has them;
# and the default kernels on one thread and on every core (a reduction split over
# threads sums in another order).
# Usage: tests/numerics_kernel_sets.sh [PYTHON] [extra pytest arguments]
# Sourced, it only defines kernel_sets (tests/test_numerics_kernel_sets.py calls it).
set -euo pipefail

# kernel_sets FLAGS THREADS: the environment of each run, one a line, for a CPU whose
# /proc/cpuinfo flags are FLAGS (space-separated) and which has THREADS cores.
kernel_sets() {
    local flags=" $1 " threads=$2 set
    has() { for flag in "$@"; do [[ $flags == *" $flag "* ]] || return 1; done; }
    local aten=(default) onednn=(SSE41)
    if has avx2 fma; then aten+=(avx2); onednn+=(AVX2); fi
    if has avx512f avx512cd avx512dq avx512bw avx512vl; then
        aten+=(avx512); onednn+=(AVX512_CORE)
        if has avx512_vnni; then onednn+=(AVX512_CORE_VNNI); fi
        if has avx512_vnni avx512_bf16; then onednn+=(AVX512_CORE_BF16); fi
        if has avx512_vnni avx512_bf16 avx512_fp16; then
            onednn+=(AVX10_1_512)
            if has amx_tile amx_bf16 amx_int8; then
                onednn+=(AVX10_1_512_AMX)
                if has amx_fp16; then onednn+=(AVX10_1_512_AMX_FP16); fi
            fi
        fi
    fi
    for set in "${aten[@]}"; do echo "ATEN_CPU_CAPABILITY=$set OMP_NUM_THREADS=1"; done
    for set in "${onednn[@]}"; do echo "ONEDNN_MAX_CPU_ISA=$set OMP_NUM_THREADS=1"; done
    echo "OMP_NUM_THREADS=$threads"
}

if [[ ${BASH_SOURCE[0]} != "$0" ]]; then return 0; fi

cd "$(dirname "$0")/.."
PY=${1:-python}
shift || true
mapfile -t runs < <(kernel_sets "$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2)" "$(nproc)")

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
