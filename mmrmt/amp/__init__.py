"""Autocast for models with mmcv's CPU kernels: bf16 autocast on the CPU hands mmcv's RoIAlign and
NMS reduced-precision tensors they have no kernels for; within :func:`float32_cpu_kernels` they,
and the box decoding before them, get float32 (what ``--amp`` of the tools, the benchmark and the
export's tensor mode run under; the tools' choice of precision is :mod:`mmrmt.utils.amp`)."""
from .float32_cpu_kernels import float32_cpu_kernels
from .float32_predictions import float32_predictions
from .float32_roi_pooling import float32_roi_pooling

__all__ = ['float32_cpu_kernels', 'float32_predictions', 'float32_roi_pooling']
