"""The one check of a (batch, channels, H, W) input an mmrmt module makes before its forward."""
import torch
from torch import nn

from ..layers import run_mode

#: What records a graph of an mmrmt module that computes what eager computes, where TorchScript's compiler
#: and torch.fx's symbolic tracer cannot (the forward follows the input's size, dtype and device in Python).
RECORD_INSTEAD = ('torch.export.export(model, (x,)) or torch.jit.trace(model, x) (each a graph of what eager '
                  'computes), or timm.create_model(name, features_only=True) for stage features')


def check_map_input(module: nn.Module, x: torch.Tensor, channels: int, channels_arg: str,
                    batch: str = 'B') -> None:
    """Fail clearly unless ``x`` is a (batch, ``channels``, H, W) float tensor ``module`` can take.

    Reads only the tensor's metadata. An empty input (batch, H or W = 0) is
    refused rather than passed through: no detector or segmentor sends one,
    and in training BatchNorm would take statistics of nothing. The dtype must
    be floating point and the module's (under ``torch.autocast``, any floating
    dtype), the device the module's.

    Args:
        module (nn.Module): The module the input is for (its first parameter
            gives the dtype and device); its class names it in messages.
        x (torch.Tensor): The input.
        channels (int): The channels it must have.
        channels_arg (str): The argument that set them, e.g. ``'in_channels'``.
        batch (str): The batch dimension's letter in messages.

    Raises:
        TypeError: A torch.fx Proxy (symbolic tracing, one line naming what records the module instead), not
            a tensor, not floating point, or another dtype.
        ValueError: Another shape or channel count, an empty input, or
            another device.
    """
    name = type(module).__name__
    if isinstance(x, torch.fx.Proxy):
        raise TypeError(f'{name} cannot be traced symbolically (torch.fx, timm\'s FX feature extraction): its '
                        f'forward follows the input\'s size and device in Python; use {RECORD_INSTEAD}.')
    expected = f'({batch}, {channels}, H, W)'
    if not isinstance(x, torch.Tensor):
        raise TypeError(f'{name} expects a {expected} torch.Tensor, got {type(x).__name__}.')
    if x.dim() != 4 or x.shape[1] != channels:
        raise ValueError(f'{name} expects {expected} inputs ({channels_arg}={channels}), got {tuple(x.shape)}.')
    if x.shape[0] == 0 or x.shape[2] == 0 or x.shape[3] == 0:
        raise ValueError(f'{name}: the input {tuple(x.shape)} is empty; pass at least one image '
                         'of at least 1x1 pixels (an empty batch is refused, not passed through).')
    if not x.is_floating_point():
        raise TypeError(f'{name}: the input dtype {x.dtype} is not floating point; convert the '
                        'images first, e.g. x.float() (normalised as the data preprocessor does).')
    weight = next(module.parameters())
    if x.dtype != weight.dtype and run_mode.autocast_dtype(x) is None:
        raise TypeError(f'{name}: the input dtype {x.dtype} differs from the model dtype '
                        f'{weight.dtype}; convert one to the other (x.to({weight.dtype}) or '
                        f'model.to({x.dtype})) or run under torch.autocast.')
    if x.device != weight.device:
        raise ValueError(f'{name}: the input is on {x.device} but the model on {weight.device}; '
                         f"move one to the other (x.to('{weight.device}')).")
