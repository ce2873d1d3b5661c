"""tests/numerics_kernel_sets.sh runs the numerics tests under every kernel set the CPU offers, AMX included."""
import subprocess
from pathlib import Path
from typing import List

SCRIPT = Path(__file__).with_name('numerics_kernel_sets.sh')
COMMON = 'fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c'
#: /proc/cpuinfo flags (the ones that matter, among others) of the three CPU classes
ZEN3 = f'{COMMON} avx2 fma bmi2 sha_ni vaes vpclmulqdq'
ZEN4 = (f'{ZEN3} avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512_bf16 avx512vbmi avx512_vbmi2 '
        'gfni avx512_vnni avx512_bitalg avx512_vpopcntdq')
SAPPHIRE_RAPIDS = f'{ZEN4} avx_vnni avx512_fp16 amx_bf16 amx_tile amx_int8'
GRANITE_RAPIDS = f'{SAPPHIRE_RAPIDS} amx_fp16'
ONE_THREAD = 'OMP_NUM_THREADS=1'


def kernel_sets(flags: str, threads: int = 8) -> List[str]:
    """The runs the script chooses for a CPU with these flags."""
    command = f'source {SCRIPT} && kernel_sets "$0" "$1"'
    return subprocess.run(['bash', '-c', command, flags, str(threads)], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def onednn_sets(flags: str) -> List[str]:
    return [run.split()[0].partition('=')[2] for run in kernel_sets(flags) if run.startswith('ONEDNN_MAX_CPU_ISA')]


def test_avx2_cpu_runs_avx2_sets_and_every_core():
    assert kernel_sets(ZEN3, threads=16) == [
        f'ATEN_CPU_CAPABILITY=default {ONE_THREAD}', f'ATEN_CPU_CAPABILITY=avx2 {ONE_THREAD}',
        f'ONEDNN_MAX_CPU_ISA=SSE41 {ONE_THREAD}', f'ONEDNN_MAX_CPU_ISA=AVX2 {ONE_THREAD}', 'OMP_NUM_THREADS=16']


def test_avx512_bf16_cpu_adds_avx512_sets_but_no_amx():
    runs = kernel_sets(ZEN4)
    assert f'ATEN_CPU_CAPABILITY=avx512 {ONE_THREAD}' in runs
    assert onednn_sets(ZEN4) == ['SSE41', 'AVX2', 'AVX512_CORE', 'AVX512_CORE_VNNI', 'AVX512_CORE_BF16']


def test_amx_cpu_adds_the_amx_levels():
    assert onednn_sets(SAPPHIRE_RAPIDS) == ['SSE41', 'AVX2', 'AVX512_CORE', 'AVX512_CORE_VNNI', 'AVX512_CORE_BF16',
                                            'AVX10_1_512', 'AVX10_1_512_AMX']
    assert onednn_sets(GRANITE_RAPIDS)[-2:] == ['AVX10_1_512_AMX', 'AVX10_1_512_AMX_FP16']


def test_amx_tiles_without_int8_and_bf16_add_no_amx_level():
    assert onednn_sets(SAPPHIRE_RAPIDS.replace(' amx_int8', ''))[-1] == 'AVX10_1_512'


def test_no_flags_runs_the_portable_sets_only():
    assert kernel_sets('', threads=1) == [f'ATEN_CPU_CAPABILITY=default {ONE_THREAD}',
                                          f'ONEDNN_MAX_CPU_ISA=SSE41 {ONE_THREAD}', 'OMP_NUM_THREADS=1']
