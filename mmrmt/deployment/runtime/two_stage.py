"""A two-stage detector's graph as two sessions: the image part at the precision asked for, the
RoI part always in float32.

A two-stage graph takes an image and boxes (``proposals``) and computes, from the boxes, the
RoI heads' outputs: mapping each box to a pyramid level by its area, scaling it to that level
and pooling (``RoIAlign``), then the heads. OpenVINO's bf16 rounds all of it to 8 significant
bits: a box corner at x = 1000 moves by up to 4 pixels and boxes change pyramid levels, so the
RoI outputs of RMT-T Mask R-CNN at 800x1216 are off float32 by more than their own largest
value (docs/deployment.md). OpenVINO 2026's per-node precision marks (``disable_fp16_compression``)
are not reachable from Python, so the graph is cut where the boxes enter (:func:`split_two_stage`):
the image part (backbone, neck, RPN head: nearly all the arithmetic) runs in bf16, the RoI part
on float32 boxes and features in f32.
"""
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

#: The precision the RoI part of a two-stage graph runs in, whatever the image part's.
ROI_PRECISION = 'f32'


def downstream_of(graph, name: str) -> Set[str]:
    """The outputs of every node that depends on the tensor ``name``."""
    reached, found = {name}, set()
    for node in graph.node:  # ONNX nodes are topologically sorted
        if reached.intersection(node.input):
            reached.update(node.output)
            found.update(node.output)
    return found


def split_two_stage(model_proto) -> Tuple[bytes, bytes, List[str]]:
    """The image part (image -> rpn_* and the cut tensors) and the RoI part (the cut tensors
    and proposals -> roi_*) of a two-stage graph, serialised, and the cut tensors' names."""
    from onnx import TensorProto
    from onnx.helper import make_tensor_value_info
    from onnx.utils import Extractor
    graph = model_proto.graph
    of_proposals = downstream_of(graph, 'proposals')
    of_image = downstream_of(graph, 'image') | {'image'}
    cut = []
    for node in graph.node:
        if set(node.output) & of_proposals:
            cut += [name for name in node.input if name in of_image and name not in of_proposals
                    and name not in cut]
    known = {value.name for value in graph.value_info}
    # the cut tensors are features (float); shape inference leaves some of them without a type
    graph.value_info.extend(make_tensor_value_info(name, TensorProto.FLOAT, None)
                            for name in cut if name not in known)
    outputs = [value.name for value in graph.output]
    extractor = Extractor(model_proto)
    image_part = extractor.extract_model(['image'], [name for name in outputs if name.startswith('rpn_')] + cut)
    roi_part = extractor.extract_model(cut + ['proposals'], [name for name in outputs if name.startswith('roi_')])
    return image_part.SerializeToString(), roi_part.SerializeToString(), cut


def is_two_stage(model_proto) -> bool:
    """Whether an ONNX model is a two-stage detector's whole graph (inputs ``image`` and ``proposals``)."""
    return [value.name for value in model_proto.graph.input] == ['image', 'proposals']


class TwoStageSessions:
    """A two-stage graph's image part at ``precision`` and RoI part in :data:`ROI_PRECISION`,
    called as one session of the whole graph is (``get_inputs()``, ``get_outputs()``,
    ``run(names, feeds)``), or part by part (``image_session``, ``roi_session``, ``cut``: the
    features the RoI part takes).

    Args:
        model_proto (onnx.ModelProto): The whole graph (see :func:`is_two_stage`), weights included.
        precision (str): The image part's: 'f32' or, in OpenVINO, 'bf16'.
        open_part (callable): ``open_part(serialised_graph, precision, input_shapes)``: a
            session of a part (``input_shapes``: the shapes of the RoI part's feature inputs, which
            ONNX's shape inference leaves unranked; see :class:`.OpenVINOSession`).
    """

    def __init__(self, model_proto, precision: str, open_part: Callable[[bytes, str, Optional[dict]], object]) -> None:
        self.output_names = [value.name for value in model_proto.graph.output]
        image_part, roi_part, self.cut = split_two_stage(model_proto)
        self.image_session = open_part(image_part, precision, None)
        cut_shapes = {port.name: [size if isinstance(size, int) else None for size in port.shape]
                      for port in self.image_session.get_outputs() if port.name in self.cut}
        self.roi_session = open_part(roi_part, ROI_PRECISION, cut_shapes)

    def get_inputs(self) -> list:
        proposals = [port for port in self.roi_session.get_inputs() if port.name == 'proposals']
        return self.image_session.get_inputs() + proposals

    def get_outputs(self) -> list:
        ports = {port.name: port for session in (self.image_session, self.roi_session)
                 for port in session.get_outputs()}
        return [ports[name] for name in self.output_names]

    def run(self, output_names: Optional[Sequence[str]], feeds: Dict[str, np.ndarray]) -> List[np.ndarray]:
        """The outputs named (all, in the whole graph's order, for None) for ``image`` and ``proposals``."""
        image_names = [port.name for port in self.image_session.get_outputs()]
        values = dict(zip(image_names, self.image_session.run(None, {'image': feeds['image']})))
        roi_feeds = {name: values[name] for name in self.cut}
        roi_feeds['proposals'] = feeds['proposals']
        roi_names = [port.name for port in self.roi_session.get_outputs()]
        values.update(zip(roi_names, self.roi_session.run(None, roi_feeds)))
        return [values[name] for name in output_names or self.output_names]
