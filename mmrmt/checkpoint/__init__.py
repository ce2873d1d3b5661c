"""Checkpoint files (``.pth`` or ``.safetensors``): read safely (weights only), write, check that they fit a
model, load strictly. Nothing here imports :mod:`mmrmt.models`: a backbone passes what it knows (its classifier
prefixes, its converter of the upstream layouts, which it keeps)."""
from .fit import (TensorSpec, cast_note, check_fit, fit_problems, kind_problem, load_model_weights, load_pretrained,
                  specs, starts_with_any)
from .reading import (StateDict, checkpoint_file_problem, copy_dropped_if_refused, extract_state_dict, is_remote,
                      is_safetensors_name, is_url, read_checkpoint, read_checkpoint_to_load, written_by_mmengine)
from .saved_config import make_resumed_config_inert, read_saved_config, resumed_config
from .weights_only import (REFUSAL_ADVICE, CheckpointRefusedError, checkpoint_safe_globals, load_weights_only,
                           one_line_reason)
from .writing import save_checkpoint, sha256_of

__all__ = [
    'TensorSpec', 'cast_note', 'check_fit', 'fit_problems', 'kind_problem', 'load_model_weights', 'load_pretrained',
    'specs', 'starts_with_any', 'StateDict', 'checkpoint_file_problem', 'extract_state_dict', 'is_remote',
    'is_safetensors_name', 'is_url', 'read_checkpoint', 'read_checkpoint_to_load', 'written_by_mmengine',
    'make_resumed_config_inert', 'read_saved_config', 'resumed_config', 'REFUSAL_ADVICE', 'CheckpointRefusedError',
    'checkpoint_safe_globals', 'load_weights_only', 'one_line_reason', 'save_checkpoint', 'sha256_of',
    'copy_dropped_if_refused'
]
