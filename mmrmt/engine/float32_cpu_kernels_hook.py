"""Keep a tested model's float32-only CPU kernels in float32 while the test loop autocasts."""
from contextlib import ExitStack

from mmengine.hooks import Hook
from mmengine.registry import HOOKS

from mmrmt.amp import float32_cpu_kernels


@HOOKS.register_module()
class Float32CPUKernelsHook(Hook):
    """For the test run, the model's RoI pooling and heads' post-processing run in float32
    (:func:`mmrmt.amp.float32_cpu_kernels`), so that mmengine's test loop can autocast it in
    bf16 on the CPU (``test_cfg.fp16``, set by ``tools/test.py --amp``): mmcv's CPU RoIAlign and
    NMS take float32 only. Registered in mmengine's ``HOOKS`` when :mod:`mmrmt.engine` is
    imported.
    """

    priority = 'VERY_HIGH'

    def __init__(self) -> None:
        self._kernels = ExitStack()

    def before_test(self, runner) -> None:
        self._kernels.enter_context(float32_cpu_kernels(runner.model))

    def after_test(self, runner) -> None:
        self._kernels.close()
