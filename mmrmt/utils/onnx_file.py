"""The one check of an ONNX model file given to a tool, before a session is opened or anything built: an ONNX
model (not a PyTorch checkpoint, not cut short), its external data inside its own folder, and, for a tool that
evaluates a whole model, not a backbone alone."""
import importlib.util
import os.path as osp
from pathlib import Path
from typing import Iterator, Tuple

from mmrmt.checkpoint import one_line_reason
from .preflight import PreflightError

#: How files that are not ONNX models start, and what they are.
FOREIGN_HEADERS = ((b'PK\x03\x04', 'a zip archive (a PyTorch checkpoint?)'),
                   (b'\x80', 'a pickle (a PyTorch checkpoint?)'))

#: The first outputs of a backbone-only graph (tensor mode: ``feature_0``, ``feature_1``...).
BACKBONE_OUTPUT_PREFIX = 'feature_'


def graph_tensors(graph, where: str = '') -> Iterator[Tuple[str, object]]:
    """(name, TensorProto) of every tensor a graph holds: initialisers, node attributes, subgraphs."""
    for tensor in graph.initializer:
        yield where + tensor.name, tensor
    for sparse in graph.sparse_initializer:
        yield where + sparse.values.name, sparse.values
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField('t'):
                yield f'{where}{node.name}.{attribute.name}', attribute.t
            yield from ((f'{where}{node.name}.{attribute.name}', tensor) for tensor in attribute.tensors)
            subgraphs = ([attribute.g] if attribute.HasField('g') else []) + list(attribute.graphs)
            for subgraph in subgraphs:
                yield from graph_tensors(subgraph, f'{where}{node.name}/')


def external_data_problem(path: str, model) -> str:
    """Why the external data of ``model`` (read from ``path``) is unsafe or missing; '' if neither."""
    from onnx import TensorProto
    folder = osp.dirname(osp.abspath(path))
    real_folder = osp.realpath(folder)
    for name, tensor in graph_tensors(model.graph):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        location = next((entry.value for entry in tensor.external_data if entry.key == 'location'), '')
        given = f'tensor {name!r} keeps its data in {location!r}'
        target = osp.normpath(osp.join(folder, location))
        if not location or osp.isabs(location):
            return f'{given}, {"no file" if not location else "an absolute path"}'
        if osp.commonpath([folder, target]) != folder:
            return f'{given}, outside the model\'s folder {folder}'
        if osp.commonpath([real_folder, osp.realpath(target)]) != real_folder:
            return f'{given}, a link to {osp.realpath(target)} outside the model\'s folder {folder}'
        if not osp.isfile(target):
            return f'{given}, which does not exist'
    return ''


def check_graph_file(path: str, role: str = 'ONNX model', whole_model: bool = False) -> None:
    """Fail unless onnx and onnxruntime are installed and ``path`` (``role`` in messages, e.g. ``'--onnx
    file'``) is an ONNX model a tool may open (see the module); ``whole_model``: refuse a backbone-only graph."""
    for module in ('onnx', 'onnxruntime'):
        if importlib.util.find_spec(module) is None:
            raise PreflightError(f'{module} is not installed; install the deploy extra: '
                                 'pip install -e ".[deploy]"')
    if not Path(path).is_file():
        raise PreflightError(f'{role} not found: {path}')
    export_hint = 'export one with tools/deployment/pytorch2onnx.py'
    with open(path, 'rb') as file:
        head = file.read(4)
    if not head:
        raise PreflightError(f'{role} {path} is empty (0 bytes); {export_hint}')
    for header, what in FOREIGN_HEADERS:
        if head.startswith(header):
            raise PreflightError(f'{role} {path} is {what}, not an ONNX model; {export_hint}')
    import onnx
    broken = f'{role} {path} is not a complete ONNX model (truncated, or another format: {{}}); {export_hint}'
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as error:  # onnx raises DecodeError and others for a file that is no model
        raise PreflightError(broken.format(one_line_reason(error))) from None
    problem = external_data_problem(path, model)
    if problem:
        raise PreflightError(f'{role} {path}: {problem}; onnxruntime reads external data only from files in '
                             "the model's folder: keep the model and its data files together")
    try:
        onnx.checker.check_model(path)  # by path: external data is found beside the model
    except Exception as error:  # ValidationError for a graph cut short, and others
        raise PreflightError(broken.format(one_line_reason(error))) from None
    outputs = [value.name for value in model.graph.output]
    if whole_model and outputs and all(name.startswith(BACKBONE_OUTPUT_PREFIX) for name in outputs):
        raise PreflightError(f'{role} {path} is a backbone-only graph (outputs {", ".join(outputs[:4])}); '
                             'this tool evaluates a whole model: export it without --backbone-only')
