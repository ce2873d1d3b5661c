"""Write a :class:`TensorModeModel` to an ONNX file with either of torch's exporters."""
import warnings
from typing import Optional, Tuple

import torch

from mmrmt.utils import replaced_atomically
from .export_forms import export_forms
from .tensor_mode import TensorModeModel, dynamic_axes, dynamic_shapes

#: Exporter name -> (lowest supported opset, default opset). The TorchScript
#: exporter is the one mmdeploy drives; the dynamo exporter writes opset 18+
#: only (asked for less, torch 2.14's writes opset 18 and merely logs it).
EXPORTERS = {'torchscript': (11, 17), 'dynamo': (18, 18)}
HIGHEST_OPSET = 20


def check_opset(exporter: str, opset: Optional[int]) -> int:
    """The opset to export with: ``opset`` if the exporter supports it, else its default."""
    if exporter not in EXPORTERS:
        raise ValueError(f'--exporter must be one of {sorted(EXPORTERS)}, got {exporter!r}')
    lowest, default = EXPORTERS[exporter]
    if opset is None:
        return default
    if not lowest <= opset <= HIGHEST_OPSET:
        others = [name for name, (low, _) in EXPORTERS.items() if low <= opset <= HIGHEST_OPSET]
        hint = f'; --exporter {others[0]} writes it' if others else ''
        raise ValueError(f'the {exporter} exporter writes opsets {lowest} to {HIGHEST_OPSET}, '
                         f'got --opset {opset}{hint}')
    return opset


def export_onnx(model: TensorModeModel, inputs: Tuple[torch.Tensor, ...], path: str,
                exporter: str = 'torchscript', opset: Optional[int] = None, dynamic: bool = False) -> None:
    """Export ``model`` traced on ``inputs`` to ``path``, written atomically.

    Args:
        model (TensorModeModel): What to export; put in eval mode.
        inputs (tuple[Tensor]): Example inputs. With ``dynamic``, give a batch
            of two or more images where the batch is dynamic (the dynamo
            exporter fixes any dimension traced at size 1).
        path (str): The ``.onnx`` file; written to a temporary file beside
            it, then moved into place.
        exporter (str): 'torchscript' (``dynamo=False``) or 'dynamo'.
        opset (int, optional): ONNX opset; by default 17 for TorchScript and
            18 for dynamo.
        dynamic (bool): Accept any batch (but for two-stage detectors) and
            any image size of at least 64 pixels. Two-stage graphs take any
            number of proposals (the TorchScript exporter's even when fixed).
    """
    opset = check_opset(exporter, opset)
    model.eval()
    names = dict(input_names=model.input_names, output_names=model.output_names(*inputs))
    with replaced_atomically(path) as temporary, torch.no_grad(), export_forms(model.model, opset), \
            warnings.catch_warnings():
        warnings.filterwarnings('ignore', category=torch.jit.TracerWarning)
        warnings.filterwarnings('ignore', message='You are using the legacy TorchScript')
        if exporter == 'torchscript':
            torch.onnx.export(model, inputs, temporary, dynamo=False, opset_version=opset,
                              dynamic_axes=dynamic_axes(model, image_size=dynamic), **names)
        else:
            program = torch.onnx.export(model, inputs, dynamo=True, opset_version=opset,
                                        dynamic_shapes=dynamic_shapes(model) if dynamic else None,
                                        verbose=False, **names)
            program.save(temporary)
