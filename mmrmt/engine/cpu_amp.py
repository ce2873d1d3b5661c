"""Mixed precision on the CPU with mmengine: bf16 autocast for training (no loss scale) and for the test
loop, mmcv's float32-only CPU kernels kept float32 (:func:`mmrmt.amp.float32_cpu_kernels`)."""
from contextlib import ExitStack, contextmanager
from typing import Iterator

import torch
from mmengine.hooks import Hook
from mmengine.optim import OptimWrapper
from mmengine.registry import HOOKS, OPTIM_WRAPPERS
from torch import nn

from mmrmt.amp import float32_cpu_kernels


@OPTIM_WRAPPERS.register_module()
class CPUAmpOptimWrapper(OptimWrapper):
    """An :class:`~mmengine.optim.OptimWrapper` whose forward and loss run under
    ``torch.autocast('cpu', torch.bfloat16)``: ``tools/train.py --amp`` on a CPU with native bf16
    (mmengine's ``AmpOptimWrapper`` needs a CUDA, NPU, MLU or MUSA device). bfloat16 has float32's
    exponent range, so no loss scale is applied; weights, gradients and the optimizer's state stay float32.
    """

    @contextmanager
    def optim_context(self, model: nn.Module) -> Iterator[None]:
        """mmengine's context (gradient accumulation) with CPU bf16 autocast around it."""
        with super().optim_context(model), torch.autocast('cpu', dtype=torch.bfloat16), float32_cpu_kernels(model):
            yield


@HOOKS.register_module()
class Float32CPUKernelsHook(Hook):
    """For the test run, the model's RoI pooling and heads' post-processing in float32, so that mmengine's
    test loop can autocast in bf16 on the CPU (``test_cfg.fp16``, set by ``tools/test.py --amp``)."""

    priority = 'VERY_HIGH'

    def __init__(self) -> None:
        self._kernels = ExitStack()

    def before_test(self, runner) -> None:
        self._kernels.enter_context(float32_cpu_kernels(runner.model))

    def after_test(self, runner) -> None:
        self._kernels.close()
