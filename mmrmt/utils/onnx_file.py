"""Preflight of an ONNX model file given to a deployment tool."""
import importlib.util
from pathlib import Path

from .preflight import PreflightError


def check_graph_file(path: str) -> None:
    """Fail unless ``path`` is a readable ONNX model and onnx/onnxruntime are installed.

    Raises:
        PreflightError: The deploy extra is missing, the file does not exist,
            or it is not an ONNX model.
    """
    for module in ('onnx', 'onnxruntime'):
        if importlib.util.find_spec(module) is None:
            raise PreflightError(f'{module} is not installed; install the deploy extra: '
                                 'pip install -e ".[deploy]"')
    if not Path(path).is_file():
        raise PreflightError(f'ONNX model not found: {path}')
    import onnx
    try:
        onnx.load(path, load_external_data=False)
    except Exception as error:  # onnx raises DecodeError and others for a file that is not a model
        raise PreflightError(f'{path} is not an ONNX model ({type(error).__name__})') from None
