"""The precision of the tools' ``--amp`` and the autocast block that runs a model in it."""
from contextlib import contextmanager
from typing import Iterator

import torch
from mmengine.config import Config
from torch import nn

from mmrmt.amp import float32_cpu_kernels
from mmrmt.cpu_features import cpu_features
from .preflight import PreflightError


def amp_dtype(device_type: str) -> torch.dtype:
    """What ``--amp`` computes in on ``device_type`` ('cuda' or 'cpu'): float16 on CUDA (as mmdet's tools),
    bfloat16 on a CPU with native bf16 arithmetic (AVX-512 BF16 or AMX).

    Raises:
        PreflightError: On a CPU without native bf16, where torch emulates it (slower than float32).
    """
    if device_type == 'cuda':
        return torch.float16
    features = cpu_features()
    if not features.bf16:
        raise PreflightError(f'--amp on the CPU: this CPU ({features.model}) has no AVX-512 BF16 or AMX, where '
                             "torch's bf16 autocast is emulated and slower than float32; run without --amp (or "
                             'on a CUDA device)')
    return torch.bfloat16


def use_amp_optim_wrapper(cfg: Config) -> None:
    """Train ``cfg`` in mixed precision: mmengine's ``AmpOptimWrapper`` (float16, the config's ``amp_loss_scale``,
    'dynamic' by default) on CUDA, :class:`~mmrmt.engine.CPUAmpOptimWrapper` on a CPU (see :func:`amp_dtype`)."""
    device_type = 'cuda' if torch.cuda.is_available() else 'cpu'
    amp_dtype(device_type)
    if device_type == 'cuda':
        cfg.optim_wrapper.type = 'AmpOptimWrapper'
        cfg.optim_wrapper.loss_scale = cfg.get('amp_loss_scale', 'dynamic')
    else:
        cfg.optim_wrapper.type = 'CPUAmpOptimWrapper'


@contextmanager
def amp_autocast(model: nn.Module, device_type: str) -> Iterator[nn.Module]:
    """Run ``model`` within the block in ``--amp``'s precision on ``device_type`` (:func:`amp_dtype`), its
    float32-only CPU kernels in float32 (:func:`mmrmt.amp.float32_cpu_kernels`)."""
    with torch.autocast(device_type, dtype=amp_dtype(device_type)), float32_cpu_kernels(model):
        yield model
