"""Reduced precision on the CPU: the dtype half-precision attention computes in on this CPU (:mod:`.cpu_attention`,
which the model layers apply), and, within :func:`float32_cpu_kernels`, mmcv's float32-only RoIAlign and NMS
and the box decoding before them in float32 under CPU autocast (what ``--amp`` of the tools, the benchmark and
the export's tensor mode run under; the tools' choice of precision is :mod:`mmrmt.utils.amp`)."""
from .cpu_attention import CPU_ATTENTION_DTYPES, cpu_attention_dtypes, half_precision_kernel_runs
from .float32_kernels import float32_cpu_kernels, float32_roi_pooling

__all__ = ['CPU_ATTENTION_DTYPES', 'cpu_attention_dtypes', 'half_precision_kernel_runs', 'float32_cpu_kernels',
           'float32_roi_pooling']
