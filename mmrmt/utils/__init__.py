"""The tools' layer: what the scripts of tools/ and demo/ share (config reading,
``--cfg-options``, preflight checks, run checkpoints, a test set's class names,
converters' flow, atomic writes, the one way a tool ends with an error). ``import mmrmt`` does not
import it; the model layer never does."""
from ..atomic_file import replaced_atomically
from .cfg_options import add_cfg_options, apply_cfg_options
from .config_file import read_config
from .conversion import backbone_converter_main, converter_arguments, write_checked
from .dataset_meta import config_dataset_meta
from .input_size import MAX_PIXELS, MAX_SIDE, check_input_size
from .model_from_config import INIT_SEED, build_cpu_model, build_seeded_model
from .onnx_file import check_graph_file
from .output_guard import check_new_file, check_not_an_input, dataloader_inputs
from .preflight import (PreflightError, check_dataloader_paths, check_evaluator_files, check_writable,
                        file_errors_as_tool_errors)
from .run_checkpoint import (check_pretrained_checkpoints, check_run_checkpoint, config_model_specs, latest_checkpoint,
                             read_run_checkpoint)
from .run_config import build_runner, load_run_config, parse_launch_args, run_phase
from .sync_bn import revert_sync_bn_when_single
from .tool_main import run_main

__all__ = [
    'replaced_atomically', 'add_cfg_options', 'apply_cfg_options', 'read_config', 'converter_arguments',
    'file_errors_as_tool_errors', 'backbone_converter_main', 'write_checked', 'config_dataset_meta', 'build_cpu_model',
    'INIT_SEED', 'build_seeded_model',
    'check_graph_file', 'MAX_PIXELS', 'MAX_SIDE', 'check_input_size',
    'PreflightError', 'check_dataloader_paths', 'check_evaluator_files', 'check_new_file', 'check_not_an_input',
    'dataloader_inputs',
    'check_writable', 'check_pretrained_checkpoints', 'check_run_checkpoint', 'config_model_specs',
    'latest_checkpoint', 'read_run_checkpoint', 'build_runner',
    'load_run_config', 'parse_launch_args', 'run_phase', 'revert_sync_bn_when_single', 'run_main'
]
