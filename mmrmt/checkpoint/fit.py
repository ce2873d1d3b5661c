"""Whether a checkpoint's weights fit a model (the one check every loader and tool uses), and the strict loads on it:
each of the model's keys (but those it may lack) with the model's shape and kind of number (an int8 tensor cast into
a float weight is meaningless), and no other key. Another dtype of the same kind is cast as ``load_state_dict`` does,
and logged. What does not fit is one line naming the first offending keys."""
import logging
from collections import Counter
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import torch
from torch import nn

from .reading import StateDict, extract_state_dict, read_checkpoint

logger = logging.getLogger(__name__)


class TensorSpec(NamedTuple):
    """What the fit check knows of a tensor."""
    shape: torch.Size
    dtype: torch.dtype


def specs(state_dict: Mapping[str, torch.Tensor]) -> Dict[str, TensorSpec]:
    """The shape and dtype of each tensor of a state dict."""
    return {key: TensorSpec(value.shape, value.dtype) for key, value in state_dict.items()}


def number_kind(dtype: torch.dtype) -> str:
    """'floating point', 'complex', 'boolean' or 'integer': the dtypes a tensor casts between meaningfully."""
    return ('floating point' if dtype.is_floating_point else 'complex' if dtype.is_complex
            else 'boolean' if dtype == torch.bool else 'integer')


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace('torch.', '')


def first_few(items: Sequence[str], count: int = 5) -> str:
    """The first ``count`` items joined by commas, with how many more there are."""
    return ', '.join(items[:count]) + (f' and {len(items) - count} more' if len(items) > count else '')


def fit_problems(model_specs: Mapping[str, TensorSpec],
                 file_specs: Mapping[str, TensorSpec],
                 may_be_missing: Tuple[str, ...] = (),
                 owner_of: Optional[Callable[[str], str]] = None,
                 shape_hint: Optional[Callable[[str], str]] = None) -> List[str]:
    """What keeps a checkpoint from loading strictly into a model: one phrase per kind of problem (shapes, kinds of
    number, unexpected keys, missing keys), each naming the first few; empty if it fits.

    Args:
        model_specs (Mapping[str, TensorSpec]): The model's (:func:`specs` of its state dict).
        file_specs (Mapping[str, TensorSpec]): The checkpoint's.
        may_be_missing (tuple[str]): Prefixes of model keys the checkpoint may lack.
        owner_of (callable, optional): Names the part of the file's network holding an unexpected key.
        shape_hint (callable, optional): Text added after a key whose shapes differ.
    """
    mismatched = [f'{key}: file {tuple(file_specs[key].shape)} vs model {tuple(model_specs[key].shape)}'
                  f'{shape_hint(key) if shape_hint else ""}'
                  for key in file_specs if key in model_specs and file_specs[key].shape != model_specs[key].shape]
    unexpected = sorted(key for key in file_specs if key not in model_specs)
    missing = sorted(key for key in model_specs
                     if key not in file_specs and not key.startswith(may_be_missing))
    other_kind = [f'{key}: file {dtype_name(spec.dtype)} vs model {dtype_name(model_specs[key].dtype)}'
                  for key, spec in file_specs.items()
                  if key in model_specs and number_kind(spec.dtype) != number_kind(model_specs[key].dtype)]
    problems: List[str] = []
    if mismatched:
        problems.append(f'{len(mismatched)} tensors differ in shape ({first_few(mismatched, 3)})')
    if other_kind:
        problems.append(f'{len(other_kind)} tensors hold another kind of number than the model\'s '
                        f'({first_few(other_kind, 3)}), which no cast makes the same weights (a quantised file?)')
    if unexpected:
        owners = f', of the {", ".join(sorted({owner_of(key) for key in unexpected}))}' if owner_of else ''
        problems.append(f'{len(unexpected)} unexpected keys{owners} ({first_few(unexpected)})')
    if missing:
        problems.append(f'{len(missing)} missing keys ({first_few(missing)})')
    return problems


def check_fit(model_specs: Mapping[str, TensorSpec], state_dict: Mapping[str, torch.Tensor], source: str, target: str,
              may_be_missing: Tuple[str, ...] = (), advice: str = 'Is it a checkpoint of another model?') -> None:
    """Fail unless ``state_dict`` loads strictly (but for keys under ``may_be_missing``) into the model whose weights
    ``model_specs`` describes (:func:`specs`), ``target`` in messages: a ``ValueError`` ``'<source> does not fit
    <target>: <problems>. <advice>'``; log the casts it needs (``'210 float16 tensors load as float32 ...'``)."""
    file_specs = specs(state_dict)
    problems = fit_problems(model_specs, file_specs, may_be_missing=may_be_missing)
    if problems:
        raise ValueError(f'{source} does not fit {target}: {"; ".join(problems)}. {advice}')
    casts = Counter((dtype_name(spec.dtype), dtype_name(model_specs[key].dtype)) for key, spec in file_specs.items()
                    if key in model_specs and spec.dtype != model_specs[key].dtype)
    if casts:
        phrases = [f'{count} {file} tensors load as {model}' for (file, model), count in casts.items()]
        logger.info(f'{source} into {target}: {", ".join(phrases)} (the model\'s dtypes)')


def load_model_weights(model: nn.Module, checkpoint: object, source: str) -> None:
    """Load every weight of ``model`` strictly from ``checkpoint`` (what :func:`read_checkpoint` returned for the
    file ``source`` names): how every tool loads one.

    Raises:
        ValueError: See :func:`extract_state_dict`, :func:`check_fit`.
    """
    state_dict = extract_state_dict(checkpoint, source)
    check_fit(specs(model.state_dict()), state_dict, source, type(model).__name__)
    model.load_state_dict(state_dict)


def load_pretrained(model: nn.Module,
                    filename: str,
                    dropped_prefixes: Tuple[str, ...] = (),
                    new_prefixes: Tuple[str, ...] = (),
                    prefix: str = '',
                    convert: Optional[Callable[[StateDict], StateDict]] = None,
                    before_load: Optional[Callable[[], None]] = None) -> None:
    """What ``init_cfg=dict(type='Pretrained')`` runs: load ``filename`` strictly but for the differences the
    backbone declares, and log what was left out (logger ``mmrmt``).

    Args:
        model (nn.Module): The backbone.
        filename (str): Path or URL of the checkpoint.
        dropped_prefixes (tuple[str]): File keys dropped without complaint (a classifier).
        new_prefixes (tuple[str]): Model keys the file may lack (they keep their initial values).
        prefix (str): See :func:`extract_state_dict`.
        convert (callable, optional): Maps a foreign layout to the model's.
        before_load (callable, optional): Called once the file is known to fit, right before loading.
    """
    state_dict = extract_state_dict(read_checkpoint(filename), filename, prefix)
    if convert is not None:
        state_dict = convert(state_dict)
    dropped = sorted(key for key in state_dict if key.startswith(dropped_prefixes))
    state_dict = {key: value for key, value in state_dict.items() if not key.startswith(dropped_prefixes)}
    missing = sorted(key for key in model.state_dict() if key not in state_dict)
    check_fit(specs(model.state_dict()), state_dict, filename, type(model).__name__, new_prefixes,
              'Is it a checkpoint of another variant (check `arch`) or of another model?')
    if before_load is not None:
        before_load()
    model.load_state_dict(state_dict, strict=False)
    logging.getLogger('mmrmt').info(
        f'{type(model).__name__}: loaded {filename}; missing keys (kept at their initialisation): '
        f'{missing or "none"}; unexpected keys (dropped): {dropped or "none"}')
