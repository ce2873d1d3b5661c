"""A graph whose batch is dynamic run a few images at a time, as the backbones run CPU inference eagerly.

A runtime holds the activations of all the images it is given at once: a
whole batch's attention matrices and hidden maps (docs/deployment.md gives
onnxruntime's peak memory against eager's). Eager CPU inference runs
the stem and blocks on chunks of images instead, as many as
:func:`mmrmt.models.layers.run_mode.inference_chunk_images` allows for the
largest map of an image. :class:`ImageChunks` applies the same rule to the
whole graph: the largest tensor of one image, read from ONNX's shape
inference at the batch's image size, decides how many images a run takes;
an :class:`ImageChunkedSession` runs them and writes the chunks' outputs
into the batch's.

Only graphs of one input whose first axis is dynamic and whose outputs have
one row an image (by shape inference; what ``pytorch2onnx.py --dynamic``
writes for backbones, single-stage detectors and segmentors) are chunked:
their images are computed independently (the export is in eval mode).
Graphs of a fixed batch, two-stage graphs (one image and its proposals),
graphs with an output of another length than the batch and OpenVINO IR
files run every batch whole.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from mmrmt.models.layers import run_mode
from ..export.image_scan import graph_inputs

#: Initialisers of at most this many elements stay in the graph kept for shape inference, whose data
#: propagation reads them (shapes, axes, indices); larger ones (the weights) become inputs of their shape.
SHAPE_VALUES = 64


def batch_is_dynamic(model_proto) -> bool:
    """Whether the graph has one input and its first axis and every output's are dynamic (the exporters do
    not always give the outputs' batch axis the input's name: :func:`one_row_an_image` checks them)."""
    inputs = graph_inputs(model_proto)
    first_axes = [value.type.tensor_type.shape.dim[:1] for value in [*inputs, *model_proto.graph.output]]
    return len(inputs) == 1 and all(axis and not axis[0].HasField('dim_value') for axis in first_axes)


def shape_skeleton(model_proto) -> None:
    """Turn ``model_proto`` (changed in place) into what shape inference needs of it: each initialiser
    of more than :data:`SHAPE_VALUES` elements becomes a graph input of its type and shape."""
    from onnx.helper import make_tensor_value_info
    graph = model_proto.graph
    declared = {value.name for value in graph.input}
    large = [initialiser for initialiser in graph.initializer if np.prod(initialiser.dims) > SHAPE_VALUES]
    graph.input.extend(make_tensor_value_info(initialiser.name, initialiser.data_type, initialiser.dims)
                       for initialiser in large if initialiser.name not in declared)
    kept = [initialiser for initialiser in graph.initializer if np.prod(initialiser.dims) <= SHAPE_VALUES]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def inferred_graph(skeleton, input_name: str, shape: Sequence[int]):
    """The graph of ``skeleton`` (see :func:`shape_skeleton`) with its input ``input_name`` fixed at
    ``shape`` and every tensor's shape that ONNX's shape inference finds (a ``GraphProto``)."""
    import onnx
    model = onnx.ModelProto()
    model.CopyFrom(skeleton)
    value = next(value for value in model.graph.input if value.name == input_name)
    for dim, size in zip(value.type.tensor_type.shape.dim, shape, strict=True):
        dim.Clear()
        dim.dim_value = size
    return onnx.shape_inference.infer_shapes(model, data_prop=True).graph


def known_shape(value) -> Optional[Tuple[int, ...]]:
    """The shape of a ``ValueInfoProto``, None where a dimension (or the rank) is unknown."""
    kind = value.type.tensor_type
    if not kind.HasField('shape') or any(not dim.HasField('dim_value') for dim in kind.shape.dim):
        return None
    return tuple(dim.dim_value for dim in kind.shape.dim)


def largest_tensor_bytes(graph, input_name: str) -> int:
    """Bytes of the largest tensor of an :func:`inferred_graph` (its input ``input_name`` and outputs
    included).

    Tensors whose shape inference leaves a dimension unknown are not counted;
    in mmrmt's graphs those are the rotary and decay tables computed from the
    image size, which every image of a batch shares.
    """
    from onnx.helper import tensor_dtype_to_np_dtype
    image = [value for value in graph.input if value.name == input_name]
    largest = 0
    for tensor in [*image, *graph.value_info, *graph.output]:
        shape = known_shape(tensor)
        if shape is not None:
            itemsize = tensor_dtype_to_np_dtype(tensor.type.tensor_type.elem_type).itemsize
            largest = max(largest, int(np.prod(shape)) * itemsize)
    return largest


def one_row_an_image(graph, batch: int) -> bool:
    """Whether every output of an :func:`inferred_graph` of ``batch`` images has ``batch`` rows."""
    return all((known_shape(output) or (None, ))[:1] == (batch, ) for output in graph.output)


class ImageChunks:
    """How many images of a batch a graph runs at a time: eager CPU inference's rule for its largest tensor.

    Args:
        model_proto (onnx.ModelProto, optional): The graph (its weights are
            dropped from it here); None (e.g. an OpenVINO IR file): every
            batch whole.
    """

    def __init__(self, model_proto=None) -> None:
        self.skeleton = self.input_name = None  # the graph without its weights, where its batch is dynamic
        if model_proto is not None and batch_is_dynamic(model_proto):
            self.input_name = graph_inputs(model_proto)[0].name
            shape_skeleton(model_proto)
            self.skeleton = model_proto
        self._images_per_run: Dict[Tuple[int, ...], Optional[int]] = {}

    def images_per_run(self, image_shape: Sequence[int]) -> Optional[int]:
        """How many images of ``image_shape`` (the input's shape without the batch) a run takes: eager's
        chunk (:func:`.run_mode.inference_chunk_images`) for the :func:`largest_tensor_bytes` of one
        image; None (every batch whole) where the batch is fixed or an output has not
        :func:`one_row_an_image` at a batch of one and of two images."""
        if self.skeleton is None:
            return None
        image_shape = tuple(image_shape)
        if image_shape not in self._images_per_run:
            one, two = (inferred_graph(self.skeleton, self.input_name, (batch, *image_shape)) for batch in (1, 2))
            images = None
            if one_row_an_image(one, 1) and one_row_an_image(two, 2):
                images = run_mode.inference_chunk_images(largest_tensor_bytes(one, self.input_name))
            self._images_per_run[image_shape] = images
        return self._images_per_run[image_shape]


class ImageChunkedSession:
    """A runtime's session whose ``run`` takes a batch a few images at a time where the graph allows it.

    Answers ``get_inputs()``, ``get_outputs()`` and ``run(names, feeds)`` as
    the session does, with the same outputs as one run of the whole batch.

    Args:
        session: An onnxruntime ``InferenceSession`` or an
            :class:`.runtimes.OpenVINOSession` of the graph.
        chunks (ImageChunks): The graph's chunks.
    """

    def __init__(self, session, chunks: ImageChunks) -> None:
        self.session = session
        self.chunks = chunks

    def get_inputs(self) -> list:
        return self.session.get_inputs()

    def get_outputs(self) -> list:
        return self.session.get_outputs()

    def run(self, output_names: Optional[Sequence[str]], feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
        """The outputs named (all for None) for ``feeds``, computed :meth:`ImageChunks.images_per_run`
        images at a time."""
        if self.chunks.skeleton is None:
            return self.session.run(output_names, feeds)
        (name, images), = feeds.items()
        step = self.chunks.images_per_run(images.shape[1:]) if len(images) > 1 else None
        if step is None or step >= len(images):
            return self.session.run(output_names, feeds)
        outputs = None
        for start in range(0, len(images), step):
            parts = self.session.run(output_names, {name: images[start:start + step]})
            if outputs is None:
                outputs = [np.empty((len(images), *part.shape[1:]), part.dtype) for part in parts]
            for output, part in zip(outputs, parts):
                output[start:start + len(part)] = part
        return outputs
