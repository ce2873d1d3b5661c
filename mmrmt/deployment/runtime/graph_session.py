"""An exported graph opened in onnxruntime or OpenVINO, behind onnxruntime's session calls.

Every tool that runs a file takes ``--runtime onnxruntime|openvino`` and
``--precision f32|bf16`` and opens it through :func:`open_graph`, which
returns an object with the calls mmrmt's code makes on an onnxruntime
session -- ``get_inputs()``, ``get_outputs()`` (each with ``.name`` and
``.shape``, ``None`` or a name for a dynamic dimension) and
``run(None, feeds)`` -- so the predictors, the verification and the
benchmark run either runtime unchanged. A graph whose batch is dynamic runs
a few images at a time, as eager CPU inference does
(:mod:`.image_chunks`), with the same outputs.

OpenVINO (CPU plugin) is set here once: ``INFERENCE_PRECISION_HINT`` given
explicitly (its default is bf16 on CPUs with AVX-512 BF16 or AMX, whose
distance from float32 docs/deployment.md measures), the ``LATENCY`` hint with one stream, and as many
inference threads as torch uses. Where the CPU has no native bf16,
OpenVINO would quietly compile a bf16 request as f32: ``--precision bf16``
is refused there instead (:func:`check_runtime`). onnxruntime's CPU
kernels are float32 only. An int8 file (quantised by ``quantize_onnx.py``)
runs its quantised layers in int8 at either precision; the hint sets the
precision of the rest.
"""
import argparse
import importlib.util
import os
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from mmrmt.cpu_features import cpu_features
from mmrmt.utils import PreflightError
from .image_chunks import ImageChunkedSession, ImageChunks
from .onnxruntime_session import onnxruntime_session
from .two_stage import ROI_PRECISION, TwoStageSessions, is_two_stage

RUNTIMES = ('onnxruntime', 'openvino')
PRECISIONS = ('f32', 'bf16')
OPENVINO_HINT = 'install the openvino extra: pip install -e ".[openvino]"'
#: oneDNN instruction-set limits under which OpenVINO's CPU plugin cannot compile our graphs
#: (OpenVINO 2026.4: a LayerNorm under ``ONEDNN_MAX_CPU_ISA=SSE41`` fails with "bad combination").
OPENVINO_UNCOMPILABLE_ISAS = ('SSE41', )
#: oneDNN limits under which OpenVINO still reports BF16 on a bf16 CPU but cannot compile a bf16 graph
#: (no bf16 matmul below AVX-512: "could not create a primitive descriptor for the matmul primitive");
#: from AVX512_CORE on, oneDNN runs bf16 (emulated without AVX512_CORE_BF16).
OPENVINO_NO_BF16_ISAS = ('SSE41', 'AVX', 'AVX2', 'AVX2_VNNI')


class RuntimeChoiceError(PreflightError):
    """A runtime or precision this machine cannot run (one ``error:`` line of the tools)."""


def add_runtime_arguments(parser: argparse.ArgumentParser, what: str = 'run the file in') -> None:
    """``--runtime`` and ``--precision``, as every tool that runs a graph takes them."""
    parser.add_argument('--runtime', choices=RUNTIMES, default='onnxruntime',
                        help=f'{what} onnxruntime (default) or OpenVINO (the openvino extra)')
    parser.add_argument('--precision', choices=PRECISIONS, default='f32',
                        help="f32 (default) or bf16 (OpenVINO's inference precision, on CPUs with AVX-512 "
                             'BF16 or AMX)')


def runtime_label(runtime: str, precision: str = 'f32') -> str:
    """How tools name a runtime and precision: 'onnxruntime', 'openvino f32', 'openvino bf16'."""
    return runtime if runtime == 'onnxruntime' else f'{runtime} {precision}'


def openvino_capabilities() -> List[str]:
    """OpenVINO's ``OPTIMIZATION_CAPABILITIES`` of this machine's CPU, e.g. ['FP32', 'INT8', 'BIN']."""
    import openvino
    return list(openvino.Core().get_property('CPU', 'OPTIMIZATION_CAPABILITIES'))


def bf16_refusal(capabilities: Sequence[str]) -> Optional[str]:
    """Why OpenVINO cannot run bf16 on a CPU with these ``capabilities`` (None if it can)."""
    if 'BF16' in capabilities:
        return None
    return (f'--precision bf16: this CPU ({cpu_features().model}) has no AVX-512 BF16 or AMX, and OpenVINO '
            f'would run f32 instead (its CPU capabilities: {", ".join(capabilities)}); use --precision f32')


def check_runtime(runtime: str, precision: str = 'f32') -> None:
    """Fail unless ``runtime`` is installed and runs ``precision`` on this CPU.

    Raises:
        RuntimeChoiceError: One line naming the problem and the fix.
    """
    if runtime not in RUNTIMES:
        raise RuntimeChoiceError(f'--runtime must be one of {", ".join(RUNTIMES)}, got {runtime!r}')
    if precision not in PRECISIONS:
        raise RuntimeChoiceError(f'--precision must be one of {", ".join(PRECISIONS)}, got {precision!r}')
    if importlib.util.find_spec(runtime) is None:
        hint = OPENVINO_HINT if runtime == 'openvino' else 'install the deploy extra: pip install -e ".[deploy]"'
        raise RuntimeChoiceError(f'{runtime} is not installed; {hint}')
    isa_limit = os.environ.get('ONEDNN_MAX_CPU_ISA', '').upper()
    if runtime == 'openvino' and isa_limit in OPENVINO_UNCOMPILABLE_ISAS:
        raise RuntimeChoiceError(f'--runtime openvino: ONEDNN_MAX_CPU_ISA={isa_limit} is set, and OpenVINO\'s CPU '
                                 'plugin cannot compile layer norms under oneDNN\'s SSE4.1 kernels ("bad '
                                 'combination"); unset ONEDNN_MAX_CPU_ISA or set it to AVX2 or above, or use '
                                 '--runtime onnxruntime')
    if precision == 'bf16' and runtime == 'onnxruntime':
        raise RuntimeChoiceError("--precision bf16 runs in OpenVINO only (onnxruntime's CPU kernels are "
                                 'float32): add --runtime openvino')
    if precision == 'bf16' and isa_limit in OPENVINO_NO_BF16_ISAS:
        raise RuntimeChoiceError(f'--precision bf16: ONEDNN_MAX_CPU_ISA={isa_limit} is set, under which OpenVINO '
                                 'cannot compile bf16 (no bf16 matmul below AVX-512); unset ONEDNN_MAX_CPU_ISA or '
                                 'set it to AVX512_CORE or above, or use --precision f32')
    if precision == 'bf16':
        refusal = bf16_refusal(openvino_capabilities())
        if refusal:
            raise RuntimeChoiceError(refusal)


class GraphPort(NamedTuple):
    """An input or output of a graph: its name and shape (None where dynamic)."""
    name: str
    shape: Tuple[Optional[int], ...]


class OpenVINOSession:
    """A graph compiled by OpenVINO for the CPU, called as an onnxruntime session is.

    Args:
        path_or_bytes (str | bytes): An ONNX file (or OpenVINO IR ``.xml``),
            or a serialised ONNX model.
        precision (str): 'f32' or 'bf16' (``INFERENCE_PRECISION_HINT``).
        threads (int, optional): Inference threads; by default
            ``torch.get_num_threads()``.
        input_shapes (dict, optional): Input name -> shape (None where
            dynamic) for inputs the graph gives no rank (OpenVINO's CPU plugin
            needs one; the RoI part of a two-stage graph takes features whose
            shapes ONNX's shape inference leaves unknown).

    Raises:
        RuntimeChoiceError: If OpenVINO compiled another precision than asked.
    """

    def __init__(self, path_or_bytes: Union[str, bytes], precision: str = 'f32', threads: Optional[int] = None,
                 input_shapes: Optional[Dict[str, Sequence[Optional[int]]]] = None) -> None:
        import openvino
        core = openvino.Core()
        model = core.read_model(path_or_bytes)
        unranked = {port.get_any_name(): openvino.PartialShape([-1 if size is None else size
                                                                for size in input_shapes[port.get_any_name()]])
                    for port in model.inputs
                    if port.get_partial_shape().rank.is_dynamic and port.get_any_name() in (input_shapes or {})}
        if unranked:
            model.reshape(unranked)
        config = {'INFERENCE_PRECISION_HINT': precision, 'PERFORMANCE_HINT': 'LATENCY', 'NUM_STREAMS': 1,
                  'INFERENCE_NUM_THREADS': threads or torch.get_num_threads()}
        self.compiled = core.compile_model(model, 'CPU', config)
        compiled_precision = self.compiled.get_property('INFERENCE_PRECISION_HINT').get_type_name()
        if compiled_precision != precision:
            raise RuntimeChoiceError(f'OpenVINO compiled the graph in {compiled_precision}, not the {precision} '
                                     'asked for')
        self.request = self.compiled.create_infer_request()

    @staticmethod
    def _port(port) -> GraphPort:
        shape = tuple(dim.get_length() if dim.is_static else None for dim in port.get_partial_shape())
        return GraphPort(port.get_any_name(), shape)

    def get_inputs(self) -> List[GraphPort]:
        return [self._port(port) for port in self.compiled.inputs]

    def get_outputs(self) -> List[GraphPort]:
        return [self._port(port) for port in self.compiled.outputs]

    def run(self, output_names: Optional[Sequence[str]], feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
        """The outputs named (all, in the graph's order, for None) for ``feeds`` (input name -> array)."""
        results = self.request.infer(feeds)
        ports = {port.get_any_name(): port for port in self.compiled.outputs}
        wanted = [ports[name] for name in output_names] if output_names else self.compiled.outputs
        return [np.array(results[port]) for port in wanted]


def open_session(path_or_bytes: Union[str, bytes], runtime: str = 'onnxruntime', precision: str = 'f32',
                 threads: Optional[int] = None, input_shapes: Optional[Dict[str, Sequence[Optional[int]]]] = None):
    """The runtime's own session of ``path_or_bytes`` at ``precision`` (checked by :func:`check_runtime`):
    an onnxruntime session (:func:`.onnxruntime_session`) or an :class:`OpenVINOSession` (which gives
    inputs without a rank their ``input_shapes``; onnxruntime runs such inputs as they come)."""
    check_runtime(runtime, precision)
    if runtime == 'onnxruntime':
        return onnxruntime_session(path_or_bytes, threads)
    return OpenVINOSession(path_or_bytes, precision, threads, input_shapes)


def open_graph(path_or_bytes: Union[str, bytes], runtime: str = 'onnxruntime', precision: str = 'f32',
               threads: Optional[int] = None,
               input_shapes: Optional[Dict[str, Sequence[Optional[int]]]] = None) -> ImageChunkedSession:
    """``path_or_bytes`` opened in ``runtime`` at ``precision`` (:func:`open_session`), its batches run
    a few images at a time where the batch is dynamic (its ``session``: the runtime's). A two-stage
    detector's graph at a precision other than f32 runs its RoI part in f32
    (:class:`.TwoStageSessions`): bf16 would round the boxes' coordinates."""
    check_runtime(runtime, precision)
    graph = onnx_graph(path_or_bytes)
    if precision != ROI_PRECISION and graph is not None and is_two_stage(graph):
        session = TwoStageSessions(onnx_model(path_or_bytes), precision, lambda part, part_precision, shapes:
                                   open_session(part, runtime, part_precision, threads, shapes))
    else:
        session = open_session(path_or_bytes, runtime, precision, threads, input_shapes)
    return ImageChunkedSession(session, ImageChunks(graph))


def onnx_model(path_or_bytes: Union[str, bytes]):
    """The ONNX model of a file or serialised model, its weights included."""
    import onnx
    return onnx.load_from_string(path_or_bytes) if isinstance(path_or_bytes, bytes) else onnx.load(path_or_bytes)


def onnx_graph(path_or_bytes: Union[str, bytes]):
    """The ONNX model of a file or serialised model (weights kept in external files not read);
    None for an OpenVINO IR file (``.xml``)."""
    import onnx
    if isinstance(path_or_bytes, bytes):
        return onnx.load_from_string(path_or_bytes)
    if str(path_or_bytes).endswith('.xml'):
        return None
    return onnx.load(path_or_bytes, load_external_data=False)
