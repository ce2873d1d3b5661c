"""Helpers of the training and testing tools, shared with the tests."""
from .atomic_file import replaced_atomically
from .config_file import read_config
from .preflight import (PreflightError, check_dataloader_paths, check_evaluator_files,
                        check_new_file, check_writable)
from .run_checkpoint import (check_pretrained_checkpoints, check_run_checkpoint, latest_checkpoint,
                             read_run_checkpoint)
from .run_config import (add_resume_rng_hook, build_runner, exit_on_preflight_error,
                         load_run_config, parse_launch_args, run_phase)
from .safe_checkpoint import MMENGINE_CHECKPOINT_TYPES, allow_mmengine_checkpoints
from .sync_bn import revert_sync_bn_when_single

__all__ = [
    'replaced_atomically', 'read_config', 'PreflightError', 'check_dataloader_paths',
    'check_evaluator_files', 'check_new_file', 'check_writable', 'check_pretrained_checkpoints',
    'check_run_checkpoint', 'latest_checkpoint', 'read_run_checkpoint', 'add_resume_rng_hook',
    'build_runner', 'exit_on_preflight_error', 'load_run_config', 'parse_launch_args', 'run_phase',
    'MMENGINE_CHECKPOINT_TYPES', 'allow_mmengine_checkpoints', 'revert_sync_bn_when_single'
]
