"""mmrmt.cpu_features reads the flags that decide int8's and bf16's worth from /proc/cpuinfo text."""
from mmrmt.cpu_features import cpu_features, parse_cpuinfo


def cpuinfo(model: str, flags: str, processors: int = 2) -> str:
    """/proc/cpuinfo text of ``processors`` entries (the first one's flags as given, the rest none)."""
    entries = [f'processor\t: 0\nvendor_id\t: X\nmodel name\t: {model}\nflags\t\t: {flags}\n']
    entries += [f'processor\t: {index}\nmodel name\t: other\nflags\t\t: \n' for index in range(1, processors)]
    return '\n'.join(entries)


ZEN3 = 'fpu sse2 avx fma avx2 bmi2 sha_ni'
ZEN4 = ZEN3 + ' avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16 avx512_vbmi2'
SAPPHIRE_RAPIDS = ZEN4 + ' avx_vnni amx_bf16 amx_tile amx_int8'
ALDER_LAKE = ZEN3 + ' avx_vnni'


def test_avx2_only_cpu_has_neither_bf16_nor_int8_dot_products():
    features = parse_cpuinfo(cpuinfo('AMD EPYC 7B13', ZEN3))
    assert features.model == 'AMD EPYC 7B13'
    assert features.has('AVX2') and not features.has('AVX-512F')
    assert not features.bf16 and not features.int8_dot_product
    assert features.summary() == ('AMD EPYC 7B13: AVX2 yes, AVX-512F no, AVX-512 VNNI no, AVX-VNNI no, '
                                  'AVX-512 BF16 no, AMX no')


def test_avx512_bf16_and_vnni_cpu():
    features = parse_cpuinfo(cpuinfo('AMD EPYC 9B14', ZEN4))
    assert features.bf16 and features.int8_dot_product
    assert features.summary().endswith('AVX-512 VNNI yes, AVX-VNNI no, AVX-512 BF16 yes, AMX no')


def test_amx_cpu_and_avx_vnni_alone():
    amx = parse_cpuinfo(cpuinfo('Intel Xeon Platinum 8480+', SAPPHIRE_RAPIDS))
    assert amx.has('AMX') and amx.has('AVX-VNNI') and amx.bf16 and amx.int8_dot_product
    vnni = parse_cpuinfo(cpuinfo('12th Gen Intel Core i7-12700', ALDER_LAKE))
    assert vnni.int8_dot_product and not vnni.bf16 and not vnni.has('AVX-512 VNNI')


def test_only_the_first_processor_and_whole_flag_names_count():
    # a flag name that merely contains another ('avx512_bf16x' is not 'avx512_bf16') and later entries' flags
    features = parse_cpuinfo(cpuinfo('CPU', 'avx2 avx512_bf16x amx_tilex', 3).replace(
        'flags\t\t: \n', 'flags\t\t: avx512_bf16 amx_tile\n'))
    assert not features.bf16 and not features.has('AMX')


def test_missing_fields_and_unreadable_file(tmp_path):
    assert parse_cpuinfo('processor\t: 0\n') == ('unknown', frozenset())
    assert cpu_features(str(tmp_path / 'no_cpuinfo')) == ('unknown', frozenset())
    (tmp_path / 'cpuinfo').write_text(cpuinfo('Some CPU', ZEN4))
    assert cpu_features(str(tmp_path / 'cpuinfo')).bf16
