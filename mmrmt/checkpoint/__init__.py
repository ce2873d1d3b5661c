"""Checkpoint files (``.pth`` or ``.safetensors``): read safely (weights only), write, check that they fit a model,
load strictly (:func:`load_model_weights`, the one way a tool loads weights
into a model it built; :func:`load_pretrained` for a backbone's
``init_cfg``), and convert the upstream layouts (:mod:`.converters`).

Nothing here imports :mod:`mmrmt.models`: this package knows files and state
dicts, not networks; a backbone passes what it knows (its classifier
prefixes, its converter) to :func:`load_pretrained`.
"""
from .fit import TensorSpec, cast_note, check_fit, first_few, fit_problems, kind_problem, specs, starts_with_any
from .loading import load_model_weights, load_pretrained
from .reading import (SAFETENSORS_META_KEY, SAFETENSORS_SUFFIX, STATE_DICT_WRAPPERS, StateDict, checkpoint_file_problem,
                      extract_state_dict, is_safetensors_name, read_checkpoint, read_safetensors, written_by_mmengine)
from .reasons import one_line_reason
from .saved_config import make_resumed_config_inert, read_saved_config, resumed_config
from .url import copy_dropped_if_refused, is_remote, is_url
from .weights_only import (REFUSAL_ADVICE, CheckpointRefusedError, checkpoint_safe_globals, load_weights_only,
                           load_with_checkpoint_types)
from .writing import save_checkpoint, sha256_of

__all__ = [
    'TensorSpec', 'cast_note', 'check_fit', 'first_few', 'fit_problems', 'kind_problem', 'specs', 'starts_with_any',
    'load_model_weights', 'load_pretrained',
    'SAFETENSORS_META_KEY', 'SAFETENSORS_SUFFIX', 'STATE_DICT_WRAPPERS',
    'StateDict', 'checkpoint_file_problem', 'extract_state_dict', 'one_line_reason', 'read_checkpoint',
    'read_safetensors', 'written_by_mmengine', 'save_checkpoint', 'sha256_of', 'is_safetensors_name',
    'make_resumed_config_inert', 'read_saved_config', 'resumed_config',
    'CheckpointRefusedError', 'REFUSAL_ADVICE', 'load_weights_only',
    'checkpoint_safe_globals', 'load_with_checkpoint_types', 'is_remote', 'is_url', 'copy_dropped_if_refused'
]
