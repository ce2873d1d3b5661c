"""Write a :class:`TensorModeModel` to an ONNX file with either of torch's exporters."""
import os.path as osp
import tempfile
import warnings
from contextlib import nullcontext
from typing import Dict, Optional, Tuple

import torch
from torch import nn
from torch.torch_version import TorchVersion

from mmrmt.atomic_file import replaced_atomically
from mmrmt.models import ResMLP
from mmrmt.utils.onnx_file import OLDEST_OPSET
from .export_forms import export_forms
from .fixed_shapes import fixed_shape_export
from .image_scan import scan_over_images
from .tensor_mode import TensorModeModel, dynamic_axes, dynamic_shapes

#: Exporter name -> (lowest supported opset, default opset). The TorchScript
#: exporter is the one mmdeploy drives; the dynamo exporter writes opset 18+
#: only (asked for less, torch 2.14's writes opset 18 and merely logs it).
EXPORTERS = {'torchscript': (OLDEST_OPSET, 17), 'dynamo': (18, 18)}
HIGHEST_OPSET = 20
#: The oldest torch (major, minor) whose dynamo exporter writes a graph of the module that holds at
#: any image size, where that is newer than the floor of requirements/runtime.txt. torch.export
#: cannot prove ResMLP's window padding and shift hold at every size, and the exporter then falls back
#: to a draft export: torch 2.7's graph holds at multiples of 32 only, 2.8's up to 224 pixels (where
#: the windows start to shift), 2.9's export raises; 2.10's on holds at every size tried.
DYNAMO_ANY_SIZE_FROM: Dict[type, Tuple[int, int]] = {ResMLP: (2, 10)}


class DynamicExportError(ValueError):
    """The dynamo exporter of the running torch cannot write this model as a graph of any size."""


def check_dynamo_any_size(model: nn.Module, torch_version: Optional[str] = None) -> None:
    """Refuse a dynamic dynamo export of ``model`` on a torch older than its modules need
    (:data:`DYNAMO_ANY_SIZE_FROM`).

    Args:
        model (nn.Module): What is exported.
        torch_version (str, optional): The torch to judge; by default the running one.

    Raises:
        DynamicExportError: Naming the module, the torch it needs and the TorchScript exporter.
    """
    version = TorchVersion(torch_version or torch.__version__)
    for module in model.modules():
        oldest = DYNAMO_ANY_SIZE_FROM.get(type(module))
        if oldest is not None and version < oldest:
            raise DynamicExportError(
                f"torch {version}'s dynamo exporter writes a {type(module).__name__} graph that holds at the "
                f'traced sizes only: export it with --exporter torchscript, or at a fixed size, or with torch '
                f'{oldest[0]}.{oldest[1]} or later')


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


def check_inputs_stay_dynamic(path: str, model: TensorModeModel) -> None:
    """Refuse a dynamo export whose graph fixed an input dimension meant to be dynamic.

    Where torch.export cannot keep the sizes symbolic, the dynamo exporter of
    older torches falls back to a draft export that may pin the graph's
    inputs to the traced sizes (torch 2.7's whole Mask R-CNN and UperNet).

    Args:
        path (str): The written ONNX file.
        model (TensorModeModel): What was exported, with dynamic inputs.

    Raises:
        DynamicExportError: Naming the fixed dimensions and the TorchScript exporter.
    """
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    fixed = []
    for value in graph.input:
        dims = value.type.tensor_type.shape.dim
        for axis, name in dynamic_axes(model).get(value.name, {}).items():
            if not dims[axis].dim_param:
                fixed.append(f'{value.name} {name} {dims[axis].dim_value}')
    if fixed:
        raise DynamicExportError(
            f"torch {torch.__version__}'s dynamo exporter fixed the graph's {', '.join(fixed)} (the traced sizes): "
            'export it with --exporter torchscript, or at a fixed size')


def export_onnx(model: TensorModeModel, inputs: Tuple[torch.Tensor, ...], path: str,
                exporter: str = 'torchscript', opset: Optional[int] = None, dynamic: bool = False,
                images_per_run: Optional[int] = None) -> None:
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
        images_per_run (int, optional): A fixed-size graph of a batch
            computes it this many images at a time (a graph of that many
            images, traced on the first ones, run by an ONNX ``Scan``: see
            :mod:`.image_scan`); must divide the batch. By default the whole
            batch at once.
    """
    opset = check_opset(exporter, opset)
    if exporter == 'dynamo' and dynamic:
        check_dynamo_any_size(model)
    batch = len(inputs[0])
    if images_per_run is not None and images_per_run < batch:
        import onnx
        with tempfile.TemporaryDirectory() as folder, replaced_atomically(path) as temporary:
            body = osp.join(folder, 'images.onnx')
            export_onnx(model, tuple(t[:images_per_run] for t in inputs), body, exporter, opset)
            onnx.save(scan_over_images(onnx.load(body), batch), temporary)
        return
    model.eval()
    names = dict(input_names=model.input_names, output_names=model.output_names(*inputs))
    shapes = nullcontext() if dynamic else fixed_shape_export()
    with replaced_atomically(path) as temporary, torch.no_grad(), export_forms(model.model, opset), shapes, \
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
            if dynamic:
                check_inputs_stay_dynamic(temporary, model)
