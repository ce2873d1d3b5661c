"""Checkpoint files (``.pth`` or ``.safetensors``): read safely (weights only), write, check that they fit a
model, load strictly. Nothing here imports :mod:`mmrmt.models`: a backbone passes what it knows (its classifier
prefixes, its converter of the upstream layouts, which it keeps)."""
from .fit import TensorSpec, check_fit, fit_problems, load_model_weights, load_pretrained, specs
from .reading import (StateDict, copy_dropped_if_refused, extract_state_dict, is_remote, is_safetensors_name, is_url,
                      read_checkpoint, read_checkpoint_to_load)
from .saved_config import make_resumed_config_inert, read_saved_config
from .weights_only import REFUSAL_ADVICE, CheckpointRefusedError, load_weights_only, one_line_reason
from .writing import save_checkpoint

__all__ = [
    'TensorSpec', 'check_fit', 'fit_problems', 'load_model_weights', 'load_pretrained',
    'specs', 'StateDict', 'copy_dropped_if_refused', 'extract_state_dict', 'is_remote', 'is_safetensors_name', 'is_url',
    'read_checkpoint', 'read_checkpoint_to_load', 'make_resumed_config_inert', 'read_saved_config', 'REFUSAL_ADVICE',
    'CheckpointRefusedError', 'load_weights_only', 'one_line_reason', 'save_checkpoint'
]
