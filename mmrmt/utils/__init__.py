"""The tools' layer: what the scripts of tools/ and demo/ share (config reading, ``--cfg-options``, preflight
checks, run checkpoints, converters' flow, the one way a tool ends with an error). ``import mmrmt`` does not
import it; the model layer never does."""
from .cfg_options import add_cfg_options, apply_cfg_options
from .config_file import read_config
from .conversion import backbone_converter_main, converter_arguments, write_checked
from .model_from_config import INIT_SEED, build_cpu_model, build_seeded_model, config_dataset_meta
from .onnx_file import check_graph_file
from .output_guard import check_data_paths, check_new_file, check_not_an_input, dataloader_inputs
from .preflight import (PreflightError, check_device, check_input_size, check_installed, check_writable,
                        file_errors_as_tool_errors, run_main)
from .run_checkpoint import check_run_checkpoint, config_model_specs, model_specs, read_run_checkpoint
from .run_config import build_runner, load_run_config, parse_launch_args, replace_sync_bn_types, run_phase

__all__ = [
    'add_cfg_options', 'apply_cfg_options', 'read_config', 'backbone_converter_main',
    'converter_arguments', 'write_checked', 'INIT_SEED', 'build_cpu_model', 'build_seeded_model',
    'config_dataset_meta', 'check_graph_file', 'check_data_paths', 'check_new_file', 'check_not_an_input',
    'dataloader_inputs', 'PreflightError', 'check_device', 'check_installed', 'check_input_size', 'check_writable',
    'file_errors_as_tool_errors', 'run_main', 'check_run_checkpoint', 'config_model_specs', 'model_specs',
    'read_run_checkpoint', 'build_runner', 'load_run_config', 'parse_launch_args', 'replace_sync_bn_types',
    'run_phase'
]
