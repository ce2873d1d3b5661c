"""Whether a checkpoint's weights fit a model: the one check every loader and tool uses.

A file fits when it holds each of the model's keys (except those the model
may lack in such files) with the model's shape, and no other key.
"""
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence

import torch


def shapes(state_dict: Mapping[str, torch.Tensor]) -> Dict[str, torch.Size]:
    """The shape of each tensor of a state dict."""
    return {key: value.shape for key, value in state_dict.items()}


def starts_with_any(key: str, prefixes: Iterable[str]) -> bool:
    """Whether ``key`` starts with one of ``prefixes``."""
    return any(key.startswith(prefix) for prefix in prefixes)


def first_few(items: Sequence[str], count: int = 5) -> str:
    """The first ``count`` items joined by commas, with how many more there are."""
    more = f' and {len(items) - count} more' if len(items) > count else ''
    return ', '.join(items[:count]) + more


def fit_problems(model_shapes: Mapping[str, torch.Size],
                 file_shapes: Mapping[str, torch.Size],
                 may_be_missing: Sequence[str] = (),
                 owner_of: Optional[Callable[[str], str]] = None,
                 shape_hint: Optional[Callable[[str], str]] = None) -> List[str]:
    """What keeps a checkpoint from loading strictly into a model.

    Args:
        model_shapes (Mapping[str, torch.Size]): The model's keys and shapes.
        file_shapes (Mapping[str, torch.Size]): The checkpoint's.
        may_be_missing (Sequence[str]): Prefixes of model keys the checkpoint
            may lack.
        owner_of (callable, optional): Names the part of the file's network a
            key belongs to; the unexpected keys' parts are then named too.
        shape_hint (callable, optional): Text added after a key whose shapes
            differ (e.g. which setting decides that shape); may be empty.

    Returns:
        list[str]: One phrase per kind of problem — tensors that differ in
        shape (in the file's order), unexpected keys, missing keys (sorted) —
        each naming the first few; empty when the checkpoint fits.
    """
    mismatched = [f'{key}: file {tuple(shape)} vs model {tuple(model_shapes[key])}'
                  f'{shape_hint(key) if shape_hint else ""}'
                  for key, shape in file_shapes.items()
                  if key in model_shapes and shape != model_shapes[key]]
    unexpected = sorted(key for key in file_shapes if key not in model_shapes)
    missing = sorted(key for key in model_shapes
                     if key not in file_shapes and not starts_with_any(key, may_be_missing))
    problems: List[str] = []
    if mismatched:
        problems.append(f'{len(mismatched)} tensors differ in shape ({first_few(mismatched, 3)})')
    if unexpected:
        owners = f', of the {", ".join(sorted({owner_of(key) for key in unexpected}))}' if owner_of else ''
        problems.append(f'{len(unexpected)} unexpected keys{owners} ({first_few(unexpected)})')
    if missing:
        problems.append(f'{len(missing)} missing keys ({first_few(missing)})')
    return problems
