"""Runner extensions: the runner and the RNG hook of mmrmt's configs, registered in mmrmt's scope (``mmrmt.registry``
imports this package on the first lookup of ``mmrmt.OwnWorkDirRunner``) and in mmengine's own registries, with the
tools' bf16 CPU optimizer wrapper and test hook. ``import mmrmt`` does not import it (it loads mmcv's ops)."""
from .cpu_amp import CPUAmpOptimWrapper, Float32CPUKernelsHook
from .own_work_dir_runner import OwnWorkDirRunner, work_dir_claim
from .resume_rng_hook import ResumeRNGHook

__all__ = ['CPUAmpOptimWrapper', 'Float32CPUKernelsHook', 'OwnWorkDirRunner', 'ResumeRNGHook', 'work_dir_claim']
