"""Runner extensions, registered in mmengine's ``RUNNERS``, ``HOOKS`` and ``OPTIM_WRAPPERS`` when this package is
imported: by the ``custom_imports`` of every mmrmt config, whichever launcher reads it, and by the tools' layer.
``import mmrmt`` does not import it (it loads mmcv's ops)."""
from .cpu_amp import CPUAmpOptimWrapper, Float32CPUKernelsHook
from .own_checkpoint import own_last_checkpoint
from .own_work_dir_runner import OwnWorkDirRunner, work_dir_claim
from .resume_rng_hook import ResumeRNGHook

__all__ = ['CPUAmpOptimWrapper', 'Float32CPUKernelsHook', 'own_last_checkpoint', 'OwnWorkDirRunner', 'ResumeRNGHook',
           'work_dir_claim']
