"""The one check of an ONNX model file given to a tool, before a session is opened or anything built: an ONNX
model (not another kind of file, not empty or cut short) of an opset the tools read, its external data inside its own
folder (onnx's checker, which refuses links out of it from onnx 1.22). Whether it is the graph of the model a
config describes: :func:`~mmrmt.utils.model_kind.check_graph_fits_config`."""
from pathlib import Path

from mmrmt.checkpoint import one_line_reason
from .preflight import PreflightError, check_installed

#: The oldest ONNX opset (of the default domain) the tools read: the oldest pytorch2onnx.py writes
#: (``--exporter torchscript``), and mmdeploy's deploy configs' opset.
OLDEST_OPSET = 11


def check_graph_file(path: str, role: str = 'ONNX model') -> None:
    """Fail unless onnx and onnxruntime are installed and ``path`` (``role`` in messages, e.g. ``'--onnx
    file'``) is an ONNX model a tool may open (see the module): of an opset of the default domain from
    :data:`OLDEST_OPSET` to the newest the installed onnx knows."""
    check_installed(('onnx', 'onnxruntime'))
    export_hint = 'export one with tools/deployment/pytorch2onnx.py'
    if not Path(path).is_file():
        raise PreflightError(f'{role} not found: {path}; give the path of an .onnx file, or {export_hint}')
    import onnx
    from onnx.external_data_helper import uses_external_data
    broken = f'{role} {path} is not a complete ONNX model (truncated, or another format: {{}}); {export_hint}'
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as error:  # onnx raises DecodeError and others for a file that is no model
        raise PreflightError(broken.format(one_line_reason(error))) from None
    version = next((entry.version for entry in model.opset_import if entry.domain in ('', 'ai.onnx')), None)
    newest = onnx.defs.onnx_opset_version()
    if version is not None and not OLDEST_OPSET <= version <= newest:  # onnx's checker passes a newer one
        age = 'older than the tools read' if version < OLDEST_OPSET else f'newer than onnx {onnx.__version__} knows'
        raise PreflightError(f'{role} {path} is of ONNX opset {version}, {age} (opsets {OLDEST_OPSET} to {newest}); '
                             f'{export_hint}')
    try:
        onnx.checker.check_model(path)  # by path: the external data files too (see the module)
    except Exception as error:  # ValidationError
        reason = one_line_reason(error)
        if any(map(uses_external_data, model.graph.initializer)):  # the weights' files are the likely cause
            raise PreflightError(f'{role} {path}: {reason.rstrip(".")}; onnxruntime reads no external data from '
                                 "outside the model's folder, nor through links: keep the model and its data files "
                                 'together in it') from None
        raise PreflightError(broken.format(reason)) from None
