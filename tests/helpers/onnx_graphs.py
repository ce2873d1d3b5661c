"""Small ONNX files made with onnx's helpers (no export): a one-MatMul graph named as the tools'
graphs are, with its weight inside or in a file beside it."""
from pathlib import Path

import numpy as np


def matmul_graph(path: Path, output: str = 'feature_0', external: str = '', opset: int = 17) -> Path:
    """``image`` (1, 3) times a 3x3 weight, as ``output``, in ONNX ``opset``; the weight in file ``external``
    beside ``path`` if given."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    weight = numpy_helper.from_array(np.ones((3, 3), np.float32), 'w')
    graph = helper.make_graph([helper.make_node('MatMul', ['image', 'w'], [output])], 'matmul',
                              [helper.make_tensor_value_info('image', TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, 3])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
    if external:
        onnx.save_model(model, str(path), save_as_external_data=True, location=external, size_threshold=0)
    else:
        onnx.save_model(model, str(path))
    return path


def relocated(path: Path, location: str, out: Path) -> Path:
    """The graph at ``path`` (external weight) saved as ``out`` with its weight's location changed."""
    import onnx
    model = onnx.load(str(path), load_external_data=False)
    for entry in model.graph.initializer[0].external_data:
        if entry.key == 'location':
            entry.value = location
    onnx.save_model(model, str(out))
    return out


def two_stage_like_graph(path: Path, masks: bool = False) -> Path:
    """A graph with a two-stage detector's ports (``image``, ``proposals`` in; ``rpn_0_0``,
    ``roi_0`` and with ``masks`` ``roi_2`` out), computing nothing of one."""
    import onnx
    from onnx import TensorProto, helper
    ports = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 3]) for name in ('image', 'proposals')]
    names = ['rpn_0_0', 'roi_0', *(['roi_2'] if masks else [])]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 3]) for name in names]
    nodes = [helper.make_node('Identity', ['image'], ['rpn_0_0'])]
    nodes += [helper.make_node('Add', ['image', 'proposals'], [name]) for name in names[1:]]
    graph = helper.make_graph(nodes, 'two_stage_like', ports, outputs)
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), str(path))
    return path
