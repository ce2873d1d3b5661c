"""Static int8 quantisation of an exported graph with onnxruntime, calibrated on real images.

:func:`quantize_graph` quantises the weights (int8, per output channel)
and activations (uint8) of the Conv, MatMul and Gemm nodes in the QDQ
format, from activation ranges measured on calibration feeds, and keeps in
float the nodes :func:`float_nodes` names:

* MatMuls of two activations -- attention's ``q k^T`` and ``softmax(.) v``:
  the logits add the decay mask's large negative values and the
  probabilities span several orders of magnitude, so 8 bits of either
  wipe out the small weights that RMT's decay leaves to distant tokens;
  these products also hold no weights to compress.
* MatMuls by a constant permutation matrix -- the rotary's swap of each
  channel pair in RMT's export form: exact in float; quantised, it would
  round values it only moves and add a quantise / dequantise pair around
  a product that costs almost nothing.
* Nodes that produce a graph output (a head's last layer: class scores,
  box deltas, mask logits): their values are ranked by NMS and thresholded
  directly, and a uint8 output keeps 256 levels over the whole range of
  every image's scores.

Weights are quantised to 7 bits (``reduce_range``): on CPUs without VNNI,
onnxruntime's uint8 x int8 kernels add pairs of products in 16 bits, which
saturate at full range. The outputs of the quantised Gemms and MatMuls stay
float (their int8 kernels write float directly): every consumer of those
outputs is a float op (LayerNorm, residual sums, GELU), and a quantise /
dequantise pair there only costs time -- and splits the GELU's pattern,
which onnxruntime then no longer fuses into one kernel.
"""
from typing import Dict, Iterable, Iterator, Optional

import numpy as np
from onnxruntime.quantization import CalibrationDataReader


def initialiser_names(graph) -> set:
    """Tensors that are constants of the graph: initialisers and Constant nodes' outputs."""
    names = {initialiser.name for initialiser in graph.initializer}
    names.update(output for node in graph.node if node.op_type == 'Constant' for output in node.output)
    return names


ATTENTION_PRODUCT = 'products of two activations (attention)'
PERMUTATION = "products by a constant permutation (the rotary's pair swap)"
OUTPUT_LAYER = "layers producing a graph output (the heads' last layers)"


def float_nodes(model_proto) -> Dict[str, str]:
    """The nodes to keep in float, by name, with the reason for each (:data:`ATTENTION_PRODUCT`,
    :data:`PERMUTATION`, :data:`OUTPUT_LAYER`)."""
    from onnx import numpy_helper
    graph = model_proto.graph
    constants = initialiser_names(graph)
    outputs = {value.name for value in graph.output}
    matrices = {initialiser.name: initialiser for initialiser in graph.initializer if len(initialiser.dims) == 2}
    kept = {}
    for node in graph.node:
        if node.op_type == 'MatMul' and not constants.intersection(node.input):
            kept[node.name] = ATTENTION_PRODUCT
        elif node.op_type == 'MatMul' and any(is_permutation(numpy_helper.to_array(matrices[name]))
                                              for name in node.input if name in matrices):
            kept[node.name] = PERMUTATION
        elif node.op_type in ('Conv', 'MatMul', 'Gemm') and outputs.intersection(node.output):
            kept[node.name] = OUTPUT_LAYER
    return kept


def is_permutation(matrix: np.ndarray) -> bool:
    """Whether ``matrix`` is square with exactly one 1 in each row and column, zeros elsewhere."""
    return (matrix.shape[0] == matrix.shape[1] and bool(np.isin(matrix, (0, 1)).all())
            and bool((matrix.sum(0) == 1).all()) and bool((matrix.sum(1) == 1).all()))


class FeedReader(CalibrationDataReader):
    """onnxruntime's calibration reader over an iterable of feeds.

    Args:
        feeds (Iterable[dict]): Input name -> numpy array, one dict a run.
    """

    def __init__(self, feeds: Iterable[Dict[str, np.ndarray]]) -> None:
        self.feeds: Iterator[Dict[str, np.ndarray]] = iter(feeds)

    def get_next(self) -> Optional[Dict[str, np.ndarray]]:
        return next(self.feeds, None)


def quantize_graph(source: str, destination: str, feeds: Iterable[Dict[str, np.ndarray]],
                   workspace: str) -> Dict[str, str]:
    """Write the int8 form of ``source`` to ``destination``; return the nodes kept in float.

    Args:
        source (str): The float ONNX file.
        destination (str): Where to write the quantised file.
        feeds (Iterable[dict]): Calibration inputs of ``source``.
        workspace (str): A folder for the pre-processed graph.
    """
    import os.path as osp

    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = osp.join(workspace, 'prepared.onnx')
    quant_pre_process(source, prepared, skip_symbolic_shape=True)
    model = onnx.load(prepared)
    kept = float_nodes(model)
    quantize_static(model, destination, FeedReader(feeds), quant_format=QuantFormat.QDQ,
                    op_types_to_quantize=['Conv', 'MatMul', 'Gemm'], per_channel=True, reduce_range=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    nodes_to_exclude=list(kept),
                    extra_options=dict(ActivationSymmetric=False,
                                       OpTypesToExcludeOutputQuantization=['MatMul', 'Gemm']))
    return kept
