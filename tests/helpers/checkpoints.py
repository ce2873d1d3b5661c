"""Writing checkpoints for loading tests."""
from pathlib import Path
from typing import Tuple

import torch
from torch import nn

from .logs import LogCapture


def save(obj: object, path: Path) -> str:
    """``torch.save(obj, path)``; return the path as a string (what ``init_cfg`` takes)."""
    torch.save(obj, path)
    return str(path)


def pretrained(path: str, **extra) -> dict:
    """The ``init_cfg`` that loads ``path``."""
    return dict(type='Pretrained', checkpoint=path, **extra)


def init_and_capture_summary(model: nn.Module) -> Tuple[nn.Module, str]:
    """Run ``model.init_weights()``; return the model and the loader's one summary line."""
    with LogCapture() as capture:
        model.init_weights()
    summary = capture.containing('loaded')
    assert len(summary) == 1, capture.messages
    return model, summary[0]
