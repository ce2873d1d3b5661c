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


def check_optim_wrapper_device(cfg: Config) -> None:
    """Fail unless this machine runs the config's optim wrapper: mmengine's ``AmpOptimWrapper`` (and its
    subclasses: float16 with loss scaling) asserts a CUDA, NPU, MLU or MUSA device when the runner builds
    it, after the work dir is made.

    Raises:
        PreflightError: One line naming the wrapper and what trains on the CPU instead.
    """
    from mmengine.device import is_cuda_available, is_mlu_available, is_musa_available, is_npu_available
    from mmengine.optim import AmpOptimWrapper
    from mmengine.registry import OPTIM_WRAPPERS
    kind = (cfg.get('optim_wrapper') or {}).get('type')
    wrapper = OPTIM_WRAPPERS.get(kind) if isinstance(kind, str) else kind
    if not (isinstance(wrapper, type) and issubclass(wrapper, AmpOptimWrapper)):
        return
    if is_cuda_available() or is_npu_available() or is_mlu_available() or is_musa_available():
        return
    raise PreflightError(f"optim_wrapper.type={wrapper.__name__} trains on a CUDA, NPU, MLU or MUSA device only "
                         "(mmengine's float16 with loss scaling), and this machine has none: on the CPU train "
                         'with --amp (bf16 autocast, where the CPU has native bf16) or with optim_wrapper.type='
                         'OptimWrapper')


@contextmanager
def amp_autocast(model: nn.Module, device_type: str) -> Iterator[nn.Module]:
    """Run ``model`` within the block in ``--amp``'s precision on ``device_type`` (:func:`amp_dtype`), its
    float32-only CPU kernels in float32 (:func:`mmrmt.amp.float32_cpu_kernels`)."""
    with torch.autocast(device_type, dtype=amp_dtype(device_type)), float32_cpu_kernels(model):
        yield model
