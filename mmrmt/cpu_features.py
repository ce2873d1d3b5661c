"""What a CPU offers, read from ``/proc/cpuinfo``: at the bottom layer, for the models' choice of
kernels (:mod:`mmrmt.amp.cpu_attention`) and the deployment runtimes' of precisions.

The instruction sets that decide which precision pays (docs/deployment.md):

* AVX2 (+FMA): float32 GEMMs; int8 only through ``pmaddubsw`` (16-bit sums);
* AVX-512F: wider float32 GEMMs;
* AVX-512 VNNI / AVX-VNNI: int8 dot products in one instruction (``vpdpbusd``);
* AVX-512 BF16: bfloat16 dot products (``vdpbf16ps``);
* AMX: tile matrix units for int8 and bfloat16 (Sapphire Rapids and later).
"""
from typing import FrozenSet, NamedTuple, Tuple

#: (printed name, /proc/cpuinfo flags any of which means it is there).
FEATURES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ('AVX2', ('avx2', )),
    ('AVX-512F', ('avx512f', )),
    ('AVX-512 VNNI', ('avx512_vnni', )),
    ('AVX-VNNI', ('avx_vnni', )),
    ('AVX-512 BF16', ('avx512_bf16', )),
    ('AMX', ('amx_tile', )),
)


class CPUFeatures(NamedTuple):
    """The model name and flags of a CPU (its first processor entry).

    Args:
        model (str): ``model name`` of /proc/cpuinfo ('unknown' if absent).
        flags (frozenset[str]): Its ``flags``.
    """
    model: str
    flags: FrozenSet[str]

    def has(self, feature: str) -> bool:
        """Whether the CPU has ``feature``, a name of :data:`FEATURES`."""
        return bool(self.flags.intersection(dict(FEATURES)[feature]))

    @property
    def bf16(self) -> bool:
        """Native bfloat16 arithmetic: AVX-512 BF16 or AMX's bf16 tiles."""
        return self.has('AVX-512 BF16') or 'amx_bf16' in self.flags

    @property
    def int8_dot_product(self) -> bool:
        """One-instruction int8 dot products: VNNI (AVX-512 or AVX) or AMX's int8 tiles."""
        return self.has('AVX-512 VNNI') or self.has('AVX-VNNI') or 'amx_int8' in self.flags

    def summary(self) -> str:
        """One line, e.g. 'AMD EPYC: AVX2 yes, AVX-512F no, ..., AMX no'."""
        return f'{self.model}: ' + ', '.join(f'{name} {"yes" if self.has(name) else "no"}' for name, _ in FEATURES)


def parse_cpuinfo(text: str) -> CPUFeatures:
    """The :class:`CPUFeatures` of the first processor described in /proc/cpuinfo ``text``."""
    fields = {}
    for line in text.split('\n\n')[0].splitlines():
        key, _, value = line.partition(':')
        fields.setdefault(key.strip(), value.strip())
    return CPUFeatures(fields.get('model name') or 'unknown', frozenset(fields.get('flags', '').split()))


def cpu_features(path: str = '/proc/cpuinfo') -> CPUFeatures:
    """This machine's :class:`CPUFeatures` (no flags where ``path`` cannot be read)."""
    try:
        with open(path) as cpuinfo:
            return parse_cpuinfo(cpuinfo.read())
    except OSError:
        return CPUFeatures('unknown', frozenset())
