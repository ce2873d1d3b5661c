"""onnxruntime sessions of exported files, with every session option chosen here once.

Every tool that runs a file (``pytorch2onnx.py --verify``, ``benchmark.py
--onnx``, ``test_onnx.py``, ``quantize_onnx.py``'s calibration) opens it
through :func:`onnxruntime_session`:

* graph optimisation: ``ORT_ENABLE_ALL`` (constant folding, operator fusion
  -- LayerNorm, GELU, MatMul + Add, Conv + activation -- and the CPU
  layout transforms);
* threads: ``intra_op_num_threads`` as many as torch uses (``--threads`` of
  the tools, else torch's default), one inter-op thread with sequential
  execution (the graphs are chains: parallel branches only steal the
  intra-op threads' cores);
* the CPU memory arena and memory-pattern planning on (from the second run
  on, a fixed-size graph's tensors come from one planned block, which the
  arena holds beside the first run's buffers: docs/deployment.md measures
  what each option costs in peak memory; a dynamic batch runs in image
  chunks instead, :mod:`.image_chunks`).
"""
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch


def session_options(threads: Optional[int] = None, profile_prefix: Optional[str] = None):
    """The :class:`onnxruntime.SessionOptions` every mmrmt tool uses.

    Args:
        threads (int, optional): Intra-op threads; by default
            ``torch.get_num_threads()``.
        profile_prefix (str, optional): Write onnxruntime's JSON profile of
            every run to a file starting with this prefix.
    """
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or torch.get_num_threads()
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.enable_cpu_mem_arena = True
    options.enable_mem_pattern = True
    options.log_severity_level = 3  # errors only: no warnings about unused initialisers
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return options


def onnxruntime_session(path_or_bytes, threads: Optional[int] = None, profile_prefix: Optional[str] = None):
    """A CPU :class:`onnxruntime.InferenceSession` of a file (or serialised model) with
    :func:`session_options`."""
    import onnxruntime
    return onnxruntime.InferenceSession(path_or_bytes, session_options(threads, profile_prefix),
                                        providers=['CPUExecutionProvider'])


def run_session(session, inputs: Sequence[torch.Tensor]) -> List[np.ndarray]:
    """``session``'s outputs for ``inputs``, given in the order of its inputs."""
    feeds = {spec.name: tensor.numpy() for spec, tensor in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def file_inputs(path: str) -> List[Tuple[str, Tuple[Optional[int], ...]]]:
    """Each graph input of an ONNX file as (name, shape), ``None`` where a dimension is dynamic.

    Reads the graph only (no weights, no session).
    """
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    initialisers = {initialiser.name for initialiser in graph.initializer}
    return [(value.name, tuple(dim.dim_value if dim.HasField('dim_value') else None
                               for dim in value.type.tensor_type.shape.dim))
            for value in graph.input if value.name not in initialisers]


def shape_mismatch(declared: Sequence[Tuple[str, Tuple[Optional[int], ...]]],
                   shapes: Sequence[Sequence[int]]) -> Optional[str]:
    """None if inputs of ``shapes`` fit the ``declared`` (name, shape) inputs, else what differs,
    e.g. "input 'image' is fixed at 16x3x224x224, got 8x3x224x224"."""
    if len(declared) != len(shapes):
        return (f'the file takes {len(declared)} inputs ({", ".join(name for name, _ in declared)}), '
                f'got {len(shapes)}')
    for (name, expected), given in zip(declared, shapes):
        given = tuple(given)
        if len(expected) != len(given) or any(size is not None and size != actual
                                              for size, actual in zip(expected, given)):
            wanted = 'x'.join('?' if size is None else str(size) for size in expected)
            return f"input '{name}' is {wanted}, got {'x'.join(map(str, given))}"
    return None
