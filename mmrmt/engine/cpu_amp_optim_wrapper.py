"""Mixed-precision training on the CPU: the forward in bf16 autocast, no loss scaling."""
from contextlib import contextmanager
from typing import Iterator

import torch
from mmengine.optim import OptimWrapper
from mmengine.registry import OPTIM_WRAPPERS
from torch import nn

from mmrmt.amp import float32_cpu_kernels


@OPTIM_WRAPPERS.register_module()
class CPUAmpOptimWrapper(OptimWrapper):
    """An :class:`~mmengine.optim.OptimWrapper` whose forward and loss run under
    ``torch.autocast('cpu', torch.bfloat16)``: what ``tools/train.py --amp`` trains with on a
    CPU with native bf16 (mmengine's ``AmpOptimWrapper`` needs a CUDA, NPU, MLU or MUSA device).

    bfloat16 has float32's exponent range, so the gradients need no loss scale (and none is
    applied); the weights, their gradients and the optimizer's state stay float32. mmcv's
    float32-only CPU kernels (RoIAlign, NMS) and the heads' box decoding run in float32
    (:func:`mmrmt.amp.float32_cpu_kernels`). Registered in mmengine's ``OPTIM_WRAPPERS`` when
    :mod:`mmrmt.engine` is imported.

    Args:
        **kwargs: Keyword arguments of :class:`~mmengine.optim.OptimWrapper`.
    """

    @contextmanager
    def optim_context(self, model: nn.Module) -> Iterator[None]:
        """mmengine's context (gradient accumulation) with CPU bf16 autocast around it.

        Args:
            model (nn.Module): The model being trained.
        """
        with super().optim_context(model), torch.autocast('cpu', dtype=torch.bfloat16), float32_cpu_kernels(model):
            yield
