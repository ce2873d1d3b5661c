"""Helpers of the training and testing tools, shared with the tests."""
from .preflight import (PreflightError, check_checkpoint_file, check_config_file,
                        check_dataloader_paths, check_evaluator_files)
from .run_config import build_runner, load_run_config, parse_launch_args, run_phase
from .safe_checkpoint import MMENGINE_CHECKPOINT_TYPES, allow_mmengine_checkpoints
from .sync_bn import revert_sync_bn_when_single

__all__ = [
    'PreflightError', 'check_checkpoint_file', 'check_config_file', 'check_dataloader_paths',
    'check_evaluator_files', 'build_runner', 'load_run_config', 'parse_launch_args', 'run_phase',
    'MMENGINE_CHECKPOINT_TYPES', 'allow_mmengine_checkpoints', 'revert_sync_bn_when_single'
]
