"""Runner extensions, registered in mmengine's ``RUNNERS``, ``HOOKS`` and ``OPTIM_WRAPPERS`` when this
package is imported: by the ``custom_imports`` of every mmrmt config
(``configs/_base_/mmrmt_runtime.py``), whichever launcher reads it, and by the
tools' layer. ``import mmrmt`` does not import it (it loads mmengine's Runner).

Importing it also guards mmengine's checkpoint loading: no loaded checkpoint
keeps code in ``meta['config']``, the text mmengine's resume runs (see
:mod:`.inert_checkpoint_loading`), and ``Runner.from_cfg`` builds the config's
``runner_type='OwnWorkDirRunner'``, which mmseg's own ``tools/test.py`` ignores
(see :mod:`.honoured_runner_type`)."""
from .cpu_amp_optim_wrapper import CPUAmpOptimWrapper
from .float32_cpu_kernels_hook import Float32CPUKernelsHook
from .honoured_runner_type import honour_own_runner_type
from .inert_checkpoint_loading import guard_checkpoint_loading
from .own_checkpoint import own_last_checkpoint
from .own_work_dir_runner import OwnWorkDirRunner
from .resume_rng_hook import ResumeRNGHook
from .work_dir_lock import WorkDirBusyError, WorkDirLock, check_work_dir_free

guard_checkpoint_loading()
honour_own_runner_type()

__all__ = [
    'CPUAmpOptimWrapper', 'Float32CPUKernelsHook', 'guard_checkpoint_loading', 'honour_own_runner_type',
    'own_last_checkpoint', 'OwnWorkDirRunner', 'ResumeRNGHook', 'WorkDirBusyError', 'WorkDirLock',
    'check_work_dir_free'
]
