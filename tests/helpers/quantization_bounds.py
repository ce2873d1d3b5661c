"""How far an int8 (QDQ) graph may stray from its float graph, derived from the steps of its
own quantisation grids (the scales of its QuantizeLinear / DequantizeLinear nodes).

Rounding to a grid of step ``s`` errs by at most ``s / 2``; as in the probabilistic model of
float rounding (:mod:`helpers.rounding`), the errors are taken as independent and uniform, of
rms ``s / sqrt(12)``. A quantised layer ``y = W x`` of ``n`` terms then errs by
``sqrt(n (E[x^2] s_w^2 + E[w^2] s_x^2) / 12)`` against an output of rms
``sqrt(n E[w^2] E[x^2])``: a relative rms error

    r = sqrt(s_w^2 / (12 E[w^2]) + s_x^2 / (12 E[x^2]))

whatever ``n`` (``s_x`` the activation's per-tensor step, ``E[x^2]`` its mean square on the
calibration feeds; ``s_w`` a weight channel's step, averaged over the channels). Normalised
layers and residual sums pass relative errors on with unit gain, and the layers' errors are
independent: they add as ``R = sqrt(sum r_l^2)`` over every quantised layer of the graph (an
upper bound where layers sit side by side rather than in series). An output relative to its
largest value then errs by at most ``LAMBDA R``.

Nothing here depends on the int8 kernels a CPU has: the integer sums are exact on every one
(with ``reduce_range``'s 7-bit weights, even the 16-bit pair sums of AVX2's ``vpmaddubsw``
cannot saturate: :func:`largest_pair_sum`); only the grid's rounding errs.
"""
import math
from typing import Dict, Iterable, List, NamedTuple

import numpy as np

from .rounding import LAMBDA

#: The largest value of a signed 16-bit sum (AVX2's u8 x s8 kernels add pairs of products in one).
INT16_MAX = 2 ** 15 - 1


class QuantisedLayer(NamedTuple):
    """A Conv / MatMul / Gemm of a QDQ graph whose activation and weight are both dequantised.

    Args:
        name (str): The node's name.
        activation (str): The float tensor its QuantizeLinear rounds.
        activation_step (float): That tensor's quantisation step.
        weight_relative_variance (float): ``s_w^2 / (12 E[w^2])``, averaged over the channels.
        largest_weight (int): The largest |quantised weight|.
    """
    name: str
    activation: str
    activation_step: float
    weight_relative_variance: float
    largest_weight: int


def constants(graph) -> Dict[str, np.ndarray]:
    """The graph's initialisers and Constant nodes' values, by name."""
    from onnx import numpy_helper
    values = {initialiser.name: numpy_helper.to_array(initialiser) for initialiser in graph.initializer}
    values.update({node.output[0]: numpy_helper.to_array(node.attribute[0].t)
                   for node in graph.node if node.op_type == 'Constant'})
    return values


def quantised_layers(model_proto) -> List[QuantisedLayer]:
    """Every Conv / MatMul / Gemm of the graph that takes a dequantised activation and weight."""
    graph = model_proto.graph
    values = constants(graph)
    producers = {output: node for node in graph.node for output in node.output}
    layers = []
    for node in graph.node:
        dequantised = [producers.get(name) for name in node.input[:2]]
        if node.op_type not in ('Conv', 'MatMul', 'Gemm') or not all(
                source is not None and source.op_type == 'DequantizeLinear' for source in dequantised):
            continue
        weight, activation = sorted(dequantised, key=lambda source: source.input[0] not in values)
        quantize = producers[activation.input[0]]
        assert quantize.op_type == 'QuantizeLinear', node.name
        levels = values[weight.input[0]].astype(np.float64)
        steps = values[weight.input[1]].astype(np.float64)
        axis = next((attribute.i for attribute in weight.attribute if attribute.name == 'axis'), 1)
        shape = [1] * levels.ndim
        shape[axis] = -1
        weights = levels * steps.reshape(shape)
        mean_square = (weights ** 2).mean(axis=tuple(i for i in range(levels.ndim) if i != axis))
        layers.append(QuantisedLayer(node.name, quantize.input[0], float(values[activation.input[1]]),
                                     float(np.mean(np.broadcast_to(steps, mean_square.shape) ** 2 / 12
                                                   / mean_square)),
                                     int(np.abs(levels).max())))
    return layers


def largest_pair_sum(layers: Iterable[QuantisedLayer]) -> int:
    """The largest |u8 x s8 + u8 x s8| the layers' integer sums can meet (uint8 activations)."""
    return 2 * 255 * max(layer.largest_weight for layer in layers)


def int8_error_bound(path: str, feeds: Iterable[Dict[str, np.ndarray]]) -> float:
    """``LAMBDA R`` (see the module's docstring) of the QDQ graph at ``path``, the activations'
    mean squares measured on ``feeds`` (the graph run without its int8 kernels)."""
    import onnx
    import onnxruntime
    from onnx import helper
    model_proto = onnx.load(path)
    layers = quantised_layers(model_proto)
    activations = sorted({layer.activation for layer in layers})
    model_proto.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in activations)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(model_proto.SerializeToString(), options,
                                           providers=['CPUExecutionProvider'])
    squares: Dict[str, List[float]] = {name: [] for name in activations}
    for feed in feeds:
        for name, value in zip(activations, session.run(activations, feed)):
            squares[name].append(float((value.astype(np.float64) ** 2).mean()))
    variance = sum(layer.activation_step ** 2 / 12 / np.mean(squares[layer.activation])
                   + layer.weight_relative_variance for layer in layers)
    return LAMBDA * math.sqrt(variance)
