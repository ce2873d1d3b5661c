"""bf16 autocast on the CPU with mmengine, for training and the test loop (:func:`mmrmt.amp.float32_cpu_kernels`)."""
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
    """mmengine's :class:`~mmengine.optim.OptimWrapper`, forward and loss under CPU bf16 autocast (``tools/train.py
    --amp`` on a CPU; mmengine's ``AmpOptimWrapper`` needs an accelerator). bfloat16 has float32's exponent range:
    no loss scale; weights, gradients and the optimizer's state stay float32."""

    @contextmanager
    def optim_context(self, model: nn.Module) -> Iterator[None]:
        with super().optim_context(model), torch.autocast('cpu', dtype=torch.bfloat16), float32_cpu_kernels(model):
            yield


@HOOKS.register_module()
class Float32CPUKernelsHook(Hook):
    """The model's RoI pooling and heads' post-processing in float32 for the test run, so that mmengine's test loop
    autocasts in bf16 on the CPU (``test_cfg.fp16``: ``tools/test.py --amp``)."""

    priority = 'VERY_HIGH'

    def __init__(self) -> None:
        self._kernels = ExitStack()

    def before_test(self, runner) -> None:
        self._kernels.enter_context(float32_cpu_kernels(runner.model))

    def after_test(self, runner) -> None:
        self._kernels.close()
