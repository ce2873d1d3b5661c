"""A ``--device`` checked before anything is built: one line instead of a traceback from deep inside a model."""
from typing import Optional

import torch

from .preflight import PreflightError


def check_device(device: Optional[str], what: str = '--device') -> None:
    """Fail unless ``device`` is None, ``'cpu'``, or a CUDA device torch sees here.

    Args:
        device (str, optional): E.g. ``'cpu'``, ``'cuda'``, ``'cuda:1'``.
        what (str): The option in messages.

    Raises:
        PreflightError: Naming the device and what to give instead.
    """
    if device is None:
        return
    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise PreflightError(f"{what} {device!r} is not a device: give 'cpu', 'cuda' or 'cuda:N'") from None
    if parsed.type == 'cpu':
        return
    if parsed.type != 'cuda':
        raise PreflightError(f"{what} {device}: this tool runs on 'cpu' or 'cuda' devices")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise PreflightError(f'{what} {device}: torch sees no CUDA device here; use --device cpu')
    if parsed.index is not None and parsed.index >= count:
        raise PreflightError(f'{what} {device}: torch sees {count} CUDA device(s), cuda:0 to cuda:{count - 1}')
