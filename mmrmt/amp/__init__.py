"""Reduced precision on the CPU: the dtype half-precision attention computes in on this CPU (:mod:`.cpu_attention`),
and mmcv's float32-only RoIAlign and NMS kept float32 under CPU autocast (:func:`float32_cpu_kernels`)."""
from .cpu_attention import CPU_ATTENTION_DTYPES, cpu_attention_dtypes, half_precision_kernel_runs
from .float32_kernels import float32_cpu_kernels, float32_roi_pooling

__all__ = ['CPU_ATTENTION_DTYPES', 'cpu_attention_dtypes', 'half_precision_kernel_runs', 'float32_cpu_kernels',
           'float32_roi_pooling']
