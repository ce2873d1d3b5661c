"""Read upstream/timm checkpoints and load them into a backbone, strictly.

Everything that does not fit is an error naming the offending keys; the only
tolerated differences are the ones a backbone declares: classifier keys the
file has and the backbone drops, and new keys (output norms, pyramid layers)
the backbone has and the file cannot.
"""
import argparse
import os.path as osp
from typing import Callable, Dict, Iterable, List, Optional, Sequence

import torch
from mmengine.logging import MMLogger, print_log
from torch import nn

StateDict = Dict[str, torch.Tensor]

#: Wrappers under which training scripts store the weights, in order of preference.
STATE_DICT_WRAPPERS = ('state_dict', 'model', 'model_ema')

#: Non-tensor objects upstream training scripts pickle beside the weights
#: (their argparse arguments); allowed in addition to torch's safe types.
CHECKPOINT_SAFE_GLOBALS = [argparse.Namespace]


def read_checkpoint(filename: str) -> object:
    """Load a checkpoint file or URL onto the CPU with ``weights_only`` safety.

    Raises:
        FileNotFoundError: The path does not exist.
        ValueError: The file is not a PyTorch checkpoint.
    """
    if filename.startswith(('http://', 'https://')):
        return torch.hub.load_state_dict_from_url(filename, map_location='cpu', weights_only=True)
    if not osp.isfile(filename):
        raise FileNotFoundError(f'checkpoint not found: {filename}')
    try:
        with torch.serialization.safe_globals(CHECKPOINT_SAFE_GLOBALS):
            return torch.load(filename, map_location='cpu', weights_only=True)
    except Exception as error:  # torch raises many kinds for a foreign file
        raise ValueError(f'{filename} is not a readable PyTorch checkpoint '
                         f'({type(error).__name__}: {str(error).splitlines()[0]})') from error


def extract_state_dict(checkpoint: object, source: str = 'checkpoint', prefix: str = '') -> StateDict:
    """Unwrap ``state_dict``/``model``/``model_ema`` and strip ``module.``.

    Args:
        checkpoint: What :func:`read_checkpoint` returned.
        source (str): Name of the file, for error messages.
        prefix (str): Keep only keys starting with it, with it removed
            (e.g. ``'backbone.'`` to take a backbone out of a detector).
    """
    if not isinstance(checkpoint, dict):
        raise ValueError(f'{source} holds a {type(checkpoint).__name__}, not a state dict')
    for wrapper in STATE_DICT_WRAPPERS:
        if isinstance(checkpoint.get(wrapper), dict):
            checkpoint = checkpoint[wrapper]
            break
    state_dict = {}
    for key, value in checkpoint.items():
        if key.startswith('module.'):
            key = key[len('module.'):]
        if prefix:
            if not key.startswith(prefix):
                continue
            key = key[len(prefix):]
        state_dict[key] = value
    not_tensors = [key for key, value in state_dict.items() if not isinstance(value, torch.Tensor)]
    if not state_dict or not_tensors:
        detail = f'entries that are not tensors: {not_tensors[:5]}' if not_tensors else (
            f'no weights{" under prefix " + repr(prefix) if prefix else ""}')
        raise ValueError(f'{source} is not a model checkpoint: {detail}')
    return state_dict


def _starts_with_any(key: str, prefixes: Iterable[str]) -> bool:
    return any(key.startswith(prefix) for prefix in prefixes)


def _first(items: Sequence[str], count: int = 5) -> str:
    more = f' and {len(items) - count} more' if len(items) > count else ''
    return ', '.join(items[:count]) + more


def load_pretrained(model: nn.Module,
                    filename: str,
                    dropped_prefixes: Sequence[str] = (),
                    new_prefixes: Sequence[str] = (),
                    prefix: str = '',
                    convert: Optional[Callable[[StateDict], StateDict]] = None,
                    before_load: Optional[Callable[[], None]] = None,
                    logger: Optional[MMLogger] = None) -> None:
    """Load ``filename`` into ``model`` strictly; log what was left out.

    Args:
        model (nn.Module): The backbone.
        filename (str): Path or URL of the checkpoint.
        dropped_prefixes (Sequence[str]): Keys of the file starting with one
            of these (a classifier) are dropped without complaint.
        new_prefixes (Sequence[str]): Keys of the model starting with one of
            these may be absent from the file; they keep their initial values.
        prefix (str): See :func:`extract_state_dict`.
        convert (callable, optional): Maps a foreign layout to the model's.
        before_load (callable, optional): Called once the file is known to
            fit, right before loading (e.g. to initialise the new keys).
        logger (MMLogger, optional): Where the summary line goes.

    Raises:
        ValueError: Shapes differ, or keys are missing or unexpected beyond
            the declared ones — typically a checkpoint of another variant.
            The model is left untouched then.
    """
    state_dict = extract_state_dict(read_checkpoint(filename), filename, prefix)
    if convert is not None:
        state_dict = convert(state_dict)
    dropped = sorted(key for key in state_dict if _starts_with_any(key, dropped_prefixes))
    state_dict = {key: value for key, value in state_dict.items() if key not in set(dropped)}

    own = model.state_dict()
    mismatched = [f'{key}: file {tuple(value.shape)} vs model {tuple(own[key].shape)}'
                  for key, value in state_dict.items() if key in own and value.shape != own[key].shape]
    unexpected = sorted(key for key in state_dict if key not in own)
    missing = sorted(key for key in own if key not in state_dict)
    not_allowed_missing = [key for key in missing if not _starts_with_any(key, new_prefixes)]
    problems: List[str] = []
    if mismatched:
        problems.append(f'{len(mismatched)} tensors differ in shape ({_first(mismatched, 3)})')
    if unexpected:
        problems.append(f'{len(unexpected)} unexpected keys ({_first(unexpected)})')
    if not_allowed_missing:
        problems.append(f'{len(not_allowed_missing)} missing keys ({_first(not_allowed_missing)})')
    if problems:
        raise ValueError(f'{filename} does not fit {type(model).__name__}: {"; ".join(problems)}. '
                         'Is it a checkpoint of another variant (check `arch`) or of another model?')

    if before_load is not None:
        before_load()
    model.load_state_dict(state_dict, strict=False)
    print_log(f'{type(model).__name__}: loaded {filename}; missing keys (kept at their '
              f'initialisation): {missing or "none"}; unexpected keys (dropped): {dropped or "none"}',
              logger=logger or 'current')
