"""Read upstream/timm checkpoints and load them into a backbone, strictly.

Everything that does not fit is an error naming the offending keys; the only
tolerated differences are the ones a backbone declares: classifier keys the
file has and the backbone drops, and new keys (output norms, pyramid layers)
the backbone has and the file cannot.
"""
import argparse
import os.path as osp
import re
import zipfile
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence

import torch
from mmengine.logging import MMLogger, print_log
from torch import nn

StateDict = Dict[str, torch.Tensor]

#: Wrappers under which training scripts store the weights, in order of preference.
STATE_DICT_WRAPPERS = ('state_dict', 'model', 'model_ema')

#: Non-tensor objects upstream training scripts pickle beside the weights
#: (their argparse arguments); allowed in addition to torch's safe types.
CHECKPOINT_SAFE_GLOBALS = [argparse.Namespace]


ANSI_ESCAPE = re.compile(r'\x1b\[[0-9;]*m')

#: torch's weights-only unpickler puts the actual reason after this marker,
#: below its general advice.
WEIGHTS_ONLY_REASON = 'WeightsUnpickler error:'


def one_line_reason(error: BaseException) -> str:
    """``error`` as ``'Type: reason'`` on one line, for a message that adds context.

    The reason is the first non-empty line of the message, taken after torch's
    weights-only advice when there is some; terminal colour codes are removed.
    """
    text = ANSI_ESCAPE.sub('', str(error))
    if WEIGHTS_ONLY_REASON in text:
        text = text.split(WEIGHTS_ONLY_REASON, 1)[1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f'{type(error).__name__}: {lines[0]}' if lines else type(error).__name__


def checkpoint_file_problem(filename: str) -> Optional[str]:
    """Why an existing local file cannot be a torch checkpoint, judged by its bytes.

    torch writes a zip archive (or, in its legacy format, a pickle, whose
    first byte is the protocol opcode 0x80).

    Returns:
        str, optional: The problem (empty, truncated, not a checkpoint), or
        None when the file may be a checkpoint.
    """
    with open(filename, 'rb') as file:
        head = file.read(16)
    if not head:
        return 'the file is empty (0 bytes)'
    if head.startswith(b'PK'):
        return None if zipfile.is_zipfile(filename) else (
            'the file is truncated or corrupted (its zip directory is missing)')
    if head.startswith(b'\x80'):
        return None
    return f'it is neither a zip archive nor a pickle (it starts with {head!r})'


def read_checkpoint(filename: str) -> object:
    """Load a checkpoint file or URL onto the CPU with ``weights_only`` safety.

    Besides tensors and containers, the unpickler accepts upstream scripts'
    argparse arguments and (once ``mmrmt`` is imported) mmengine's training
    state.

    Raises:
        FileNotFoundError: The path does not exist.
        ValueError: The file is not a PyTorch checkpoint (empty, truncated,
            another kind of file) or holds objects that are not allowed.
    """
    if filename.startswith(('http://', 'https://')):
        return torch.hub.load_state_dict_from_url(filename, map_location='cpu', weights_only=True)
    if not osp.isfile(filename):
        raise FileNotFoundError(f'checkpoint not found: {filename}')
    unreadable = f'{filename} is not a readable PyTorch checkpoint'
    problem = checkpoint_file_problem(filename)
    if problem is not None:
        raise ValueError(f'{unreadable}: {problem}')
    try:
        with torch.serialization.safe_globals(CHECKPOINT_SAFE_GLOBALS):
            return torch.load(filename, map_location='cpu', weights_only=True)
    except Exception as error:  # torch raises many kinds for a foreign file
        raise ValueError(f'{unreadable}: {one_line_reason(error)}') from error


def written_by_mmengine(checkpoint: object) -> bool:
    """Whether ``checkpoint`` was saved by an mmengine runner (mmdet 3.x / mmseg 1.x
    training, e.g. mmrmt's tools/train.py): the whole model under ``state_dict``
    (its backbone under ``backbone.``), the run's config text in ``meta['cfg']``."""
    return (isinstance(checkpoint, dict) and isinstance(checkpoint.get('meta'), dict)
            and 'mmengine_version' in checkpoint['meta'])


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


def fit_problems(model_shapes: Mapping[str, torch.Size],
                 file_shapes: Mapping[str, torch.Size],
                 may_be_missing: Sequence[str] = ()) -> List[str]:
    """What keeps a checkpoint from loading strictly into a model.

    Args:
        model_shapes (Mapping[str, torch.Size]): The model's keys and shapes.
        file_shapes (Mapping[str, torch.Size]): The checkpoint's.
        may_be_missing (Sequence[str]): Prefixes of model keys the checkpoint
            may lack.

    Returns:
        list[str]: One phrase per kind of problem — tensors that differ in
        shape (in the file's order), unexpected keys, missing keys (sorted) —
        each naming the first few; empty when the checkpoint fits.
    """
    mismatched = [f'{key}: file {tuple(shape)} vs model {tuple(model_shapes[key])}'
                  for key, shape in file_shapes.items()
                  if key in model_shapes and shape != model_shapes[key]]
    unexpected = sorted(key for key in file_shapes if key not in model_shapes)
    missing = sorted(key for key in model_shapes
                     if key not in file_shapes and not _starts_with_any(key, may_be_missing))
    problems: List[str] = []
    if mismatched:
        problems.append(f'{len(mismatched)} tensors differ in shape ({_first(mismatched, 3)})')
    if unexpected:
        problems.append(f'{len(unexpected)} unexpected keys ({_first(unexpected)})')
    if missing:
        problems.append(f'{len(missing)} missing keys ({_first(missing)})')
    return problems


def shapes(state_dict: Mapping[str, torch.Tensor]) -> Dict[str, torch.Size]:
    """The shape of each tensor of a state dict."""
    return {key: value.shape for key, value in state_dict.items()}


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
    missing = sorted(key for key in own if key not in state_dict)
    problems = fit_problems(shapes(own), shapes(state_dict), may_be_missing=new_prefixes)
    if problems:
        raise ValueError(f'{filename} does not fit {type(model).__name__}: {"; ".join(problems)}. '
                         'Is it a checkpoint of another variant (check `arch`) or of another model?')

    if before_load is not None:
        before_load()
    model.load_state_dict(state_dict, strict=False)
    print_log(f'{type(model).__name__}: loaded {filename}; missing keys (kept at their '
              f'initialisation): {missing or "none"}; unexpected keys (dropped): {dropped or "none"}',
              logger=logger or 'current')
