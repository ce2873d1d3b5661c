"""What our tools add to the runner's checkpoint gate (whose lines they share): the config's model finds each of its
weights in the file, with the same shape and kind of number, and nothing more, unless ``--allow-partial-load``."""
from typing import Dict, Mapping, Optional

from mmengine.config import Config
from mmengine.model import BaseTTAModel
from torch import nn

from mmrmt.checkpoint import StateDict, TensorSpec, check_fit, extract_state_dict, read_checkpoint_to_load, specs
from .model_from_config import build_cpu_model
from .preflight import PreflightError, file_errors_as_tool_errors


def read_run_checkpoint(path: str, role: str, resume: bool = False, remote_ok: bool = True) -> Optional[dict]:
    """:func:`~mmrmt.checkpoint.read_checkpoint_to_load`, the runner's gate, its line a :class:`PreflightError`;
    a remote path it does not read (``s3://``...) is None, left to the runner, or, unless ``remote_ok`` (a tool
    that reads the file itself), refused."""
    with file_errors_as_tool_errors():
        checkpoint = read_checkpoint_to_load(path, role, resume)
    if checkpoint is None and not remote_ok:
        raise PreflightError(f'{role} {path}: give a local file or an http(s) URL')
    return checkpoint


def model_specs(model: nn.Module) -> Dict[str, TensorSpec]:
    """The shapes and dtypes of ``model``'s weights (a TTA wrapper's: those of the model it wraps)."""
    return specs((model.module if isinstance(model, BaseTTAModel) else model).state_dict())


def config_model_specs(cfg: Config) -> Dict[str, TensorSpec]:
    """:func:`model_specs` of the model ``cfg`` describes (built quietly, then dropped)."""
    return model_specs(build_cpu_model(cfg, quiet=True))


def check_run_checkpoint(cfg: Config, model_specs: Mapping[str, TensorSpec], path: str, role: str,
                         resume: bool = False, allow_partial: bool = False) -> Optional[StateDict]:
    """Fail before the run unless ``path`` passes :func:`read_run_checkpoint` and holds the whole model of ``cfg``
    (``model_specs``: :func:`model_specs`; the problems: :func:`~mmrmt.checkpoint.check_fit`); ``allow_partial``:
    only the kinds of number of the tensors that match in shape. Returns the file's weights (None for a remote path
    the runner reads)."""
    checkpoint = read_run_checkpoint(path, role, resume)
    if checkpoint is None:
        return None
    weights = extract_state_dict(checkpoint, path)
    if allow_partial:  # what mmengine's partial load loads: the tensors that match in shape, cast (integers never)
        matching = {key: value for key, value in weights.items()
                    if key in model_specs and value.shape == model_specs[key].shape}
        with file_errors_as_tool_errors():
            check_fit(model_specs, matching, f'{role} {path}', f'the model of {cfg.filename} even in part', ('',),
                      'Load a floating-point checkpoint')
        return weights
    with file_errors_as_tool_errors():
        check_fit(model_specs, weights, f'{role} {path}', f'the model of {cfg.filename}',
                  advice='Is it a checkpoint of another model? To load only the weights that match on purpose (e.g. '
                  'to fine-tune with other classes), add --allow-partial-load')
    return weights
