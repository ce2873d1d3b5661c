"""Reduced precision on the CPU: the dtype half-precision attention computes in on this CPU (:mod:`.cpu_attention`),
and mmcv's float32-only RoIAlign and NMS kept float32 under CPU autocast (:func:`float32_cpu_kernels`)."""
from .float32_kernels import float32_cpu_kernels, float32_roi_pooling

__all__ = ['float32_cpu_kernels', 'float32_roi_pooling']
