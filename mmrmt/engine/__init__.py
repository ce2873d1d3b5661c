"""Runner extensions, registered in mmengine's ``HOOKS`` and ``RUNNERS`` for any
launcher's configs."""
from .own_checkpoint import own_last_checkpoint
from .own_work_dir_runner import OwnWorkDirRunner
from .resume_rng_hook import ResumeRNGHook
from .work_dir_lock import WorkDirBusyError, WorkDirLock, check_work_dir_free

__all__ = [
    'own_last_checkpoint', 'OwnWorkDirRunner', 'ResumeRNGHook', 'WorkDirBusyError', 'WorkDirLock',
    'check_work_dir_free'
]
