"""A fixed-batch graph that computes its batch a few images at a time, inside the graph (ONNX ``Scan``).

A runtime holds every tensor of the batch it is given: a fixed 16-image
RMT-T backbone graph holds several times the peak memory of eager CPU
inference (docs/deployment.md measures it), which runs its blocks a few
images at a time. :func:`scan_over_images` turns a
graph of ``images`` images (its body) into one of ``batch`` images: the
input is reshaped to (batch / images, images, ...), a ``Scan`` runs the
body on each chunk in turn (its tensors freed between chunks), and each
output is reshaped back to (batch, ...). The body's weights stay in the
body, once. Any runtime that reads ONNX (onnxruntime, OpenVINO) runs the
file as it is, no tool of ours needed; every image's outputs are the body's.

Only graphs of one input whose outputs have one row an image (backbones,
single-stage detectors, segmentors) take this form.
"""
from typing import List

import numpy as np


def graph_inputs(model_proto) -> list:
    """The graph's inputs that are not initialisers (``ValueInfoProto``)."""
    weights = {initialiser.name for initialiser in model_proto.graph.initializer}
    return [value for value in model_proto.graph.input if value.name not in weights]


def fixed_shape(value) -> List[int]:
    """The shape of a ``ValueInfoProto``; raises ValueError where a dimension is not fixed."""
    dims = value.type.tensor_type.shape.dim
    if any(not dim.HasField('dim_value') for dim in dims):
        raise ValueError(f"graph value '{value.name}' has no fixed shape: only fixed-size graphs are scanned")
    return [dim.dim_value for dim in dims]


def scan_over_images(body, batch: int):
    """A ``ModelProto`` of ``batch`` images that runs ``body`` (a fixed-size graph of one input whose
    outputs have one row an image) on its images, as many at a time as ``body`` takes.

    Raises:
        ValueError: the body has several inputs, an output of another length
            than its batch, or a batch that does not divide ``batch``.
    """
    from onnx import helper, numpy_helper
    graph = body.graph
    inputs = graph_inputs(body)
    if len(inputs) != 1:
        raise ValueError(f'a graph of one input runs in image chunks, this one takes {len(inputs)}')
    image_shape = fixed_shape(inputs[0])
    images = image_shape[0]
    if batch % images:
        raise ValueError(f'{images} images a run do not divide a batch of {batch}')
    output_shapes = [fixed_shape(output) for output in graph.output]
    if any(shape[:1] != [images] for shape in output_shapes):
        raise ValueError('only graphs whose outputs have one row an image run in image chunks')

    def shape_constant(name: str, shape: List[int]):
        return numpy_helper.from_array(np.array(shape, np.int64), name)

    image = inputs[0].name
    chunked = [f'{output.name}_chunks' for output in graph.output]
    body_graph = helper.make_graph(list(graph.node), f'{graph.name}_images', [inputs[0]], list(graph.output),
                                   list(graph.initializer), value_info=list(graph.value_info))
    nodes = [helper.make_node('Reshape', [image, 'image_chunks_shape'], ['image_chunks']),
             helper.make_node('Scan', ['image_chunks'], chunked, body=body_graph, num_scan_inputs=1)]
    constants = [shape_constant('image_chunks_shape', [batch // images, *image_shape])]
    outputs = []
    for output, shape, name in zip(graph.output, output_shapes, chunked):
        constants.append(shape_constant(f'{output.name}_batch_shape', [batch, *shape[1:]]))
        nodes.append(helper.make_node('Reshape', [name, f'{output.name}_batch_shape'], [output.name]))
        outputs.append(helper.make_tensor_value_info(output.name, output.type.tensor_type.elem_type,
                                                     [batch, *shape[1:]]))
    image_input = helper.make_tensor_value_info(image, inputs[0].type.tensor_type.elem_type,
                                                [batch, *image_shape[1:]])
    scanned = helper.make_graph(nodes, graph.name, [image_input], outputs, constants)
    model = helper.make_model(scanned, opset_imports=list(body.opset_import), ir_version=body.ir_version,
                              producer_name=body.producer_name, producer_version=body.producer_version)
    model.functions.extend(body.functions)
    return model
