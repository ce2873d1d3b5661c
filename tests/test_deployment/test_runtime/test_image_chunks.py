"""mmrmt.deployment.runtime.image_chunks: a graph of a dynamic batch runs a few images at a time in either runtime,
as many as eager CPU inference's rule allows for its largest tensor of an image, with the whole batch's outputs;
graphs of a fixed batch, of two inputs or of outputs that are not one row an image run whole."""
import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from mmrmt.deployment.export import TensorModeModel, export_onnx
from mmrmt.deployment.runtime import RUNTIMES, open_graph
from mmrmt.deployment.runtime.image_chunks import ImageChunkedSession, inferred_graph, largest_tensor_bytes
from mmrmt.models.backbones import RMT
from mmrmt.models.layers import run_mode
from helpers.backbones import RMT_TINY
from helpers.openvino_refusal import refused_in_process
from helpers.rounding import assert_close, two_implementations

#: The RMT's longest reduction: the last downsampling conv, 3x3 over 48 channels; its sequential steps:
#: about a dozen reductions in each of its 5 blocks (CPE, q/k/v, two attention products in each of
#: two passes, LCE, output projection, FFN and its depthwise conv, norms), the stem's and the
#: downsampling convs: at most 68.
RMT_TERMS, RMT_DEPTH = 9 * 48, 12 * 5 + 8


def image_bytes(session: ImageChunkedSession, image_shape: tuple) -> int:
    """The largest tensor of one image of ``image_shape`` in the session's graph."""
    return largest_tensor_bytes(inferred_graph(session.chunks.skeleton, 'image', (1, *image_shape)), 'image')


def run_calls(session: ImageChunkedSession) -> list:
    """The batch sizes the runtime's session is run on, recorded from now on."""
    calls, run = [], session.session.run
    session.session.run = lambda names, feeds: calls.append([len(array) for array in feeds.values()]) or run(
        names, feeds)
    return calls


@pytest.fixture(scope='module')
def tiny_rmt_graph(tmp_path_factory):
    """A tiny RMT backbone's dynamic graph (TorchScript exporter: it names the batch axis of only some
    of the outputs)."""
    torch.manual_seed(0)
    network = RMT(RMT_TINY, drop_path_rate=0.)
    network.init_weights()
    model = TensorModeModel(network.eval())
    path = tmp_path_factory.mktemp('onnx') / 'rmt.onnx'
    export_onnx(model, model.example_inputs(64, 96, batch=2), str(path), dynamic=True)
    return str(path)


@pytest.mark.parametrize('runtime', RUNTIMES)
def test_a_dynamic_batch_runs_in_chunks_with_the_whole_batchs_outputs(tiny_rmt_graph, runtime, monkeypatch):
    if runtime == 'openvino' and refused_in_process(lambda: open_graph(tiny_rmt_graph, runtime)):
        return
    session = open_graph(tiny_rmt_graph, runtime)
    largest = image_bytes(session, (3, 64, 96))
    monkeypatch.setattr(run_mode, 'INFERENCE_CHUNK_BYTES', 2 * largest)  # two images a run
    images = np.random.default_rng(0).standard_normal((5, 3, 64, 96), dtype=np.float32)
    whole = session.session.run(None, {'image': images})
    calls = run_calls(session)
    chunked = session.run(None, {'image': images})
    assert calls == [[2], [2], [1]]
    # the same float32 function of each image: within two computations' rounding
    for ours, expected in zip(chunked, whole, strict=True):
        assert ours.shape == expected.shape
        assert_close(torch.from_numpy(ours), torch.from_numpy(expected),
                     two_implementations(torch.float32, RMT_TERMS, RMT_DEPTH))
    # named outputs come back as asked, chunked alike
    last, first = session.run(['feature_3', 'feature_0'], {'image': images})
    assert np.array_equal(last, chunked[3]) and np.array_equal(first, chunked[0])
    assert calls[3:] == [[2], [2], [1]]


def test_the_chunk_is_eager_inferences_for_the_graphs_largest_tensor_of_an_image(tiny_rmt_graph, monkeypatch):
    session = open_graph(tiny_rmt_graph)
    asked = []
    monkeypatch.setattr(run_mode, 'inference_chunk_images', lambda image_bytes: asked.append(image_bytes) or 3)
    calls = run_calls(session)
    images = np.zeros((7, 3, 64, 96), np.float32)
    session.run(None, {'image': images})
    session.run(None, {'image': images[:4]})  # the same image size: decided once
    assert asked == [image_bytes(session, (3, 64, 96))]
    assert calls == [[3], [3], [1], [3], [1]]
    # at another image size, decided again; a single image runs as it is
    session.run(None, {'image': np.zeros((2, 3, 96, 64), np.float32)})
    session.run(None, {'image': np.zeros((1, 3, 128, 128), np.float32)})
    assert asked[1:] == [image_bytes(session, (3, 96, 64))]
    assert calls[5:] == [[2], [1]]


def wide_graph(path, batch='batch', proposals: bool = False, summed: bool = False):
    """``image`` (batch, 3) of integers times a 3x1000 matrix, then a 1000x2 one: its largest tensor of an
    image is the (1, 1000) float32 product, 4000 bytes; with ``proposals`` a second input is added to the
    output, with ``summed`` the output is the batch's sum, one row whatever the batch."""
    first = numpy_helper.from_array(np.arange(3000, dtype=np.float32).reshape(3, 1000) % 7, 'first')
    second = numpy_helper.from_array(np.arange(2000, dtype=np.float32).reshape(1000, 2) % 5, 'second')
    nodes = [helper.make_node('MatMul', ['image', 'first'], ['hidden']),
             helper.make_node('MatMul', ['hidden', 'second'], ['product'])]
    inputs = [helper.make_tensor_value_info('image', TensorProto.FLOAT, [batch, 3])]
    if proposals:
        inputs.append(helper.make_tensor_value_info('proposals', TensorProto.FLOAT, [batch, 2]))
        nodes.append(helper.make_node('Add', ['product', 'proposals'], ['out']))
    elif summed:
        axes = numpy_helper.from_array(np.array([0], np.int64), 'axes')
        nodes.append(helper.make_node('ReduceSum', ['product', 'axes'], ['out'], keepdims=1))
    else:
        nodes.append(helper.make_node('Identity', ['product'], ['out']))
    weights = [first, second] + ([axes] if summed else [])
    out = helper.make_tensor_value_info('out', TensorProto.FLOAT, ['rows' if summed else batch, 2])
    graph = helper.make_graph(nodes, 'wide', inputs, [out], weights)
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid('', 17)]), str(path))
    return str(path)


def test_the_largest_tensor_of_an_image_is_read_from_shape_inference_without_the_weights(tmp_path, monkeypatch):
    session = open_graph(wide_graph(tmp_path / 'wide.onnx'))
    assert not session.chunks.skeleton.graph.initializer  # the weights are left out: shapes only
    assert image_bytes(session, (3, )) == 1000 * 4
    assert session.chunks.images_per_run((3, )) == run_mode.inference_chunk_images(4000)
    monkeypatch.setattr(run_mode, 'INFERENCE_CHUNK_BYTES', 8000)
    session = open_graph(wide_graph(tmp_path / 'wide.onnx'))
    images = np.arange(15, dtype=np.float32).reshape(5, 3) % 4
    whole = session.session.run(None, {'image': images})[0]
    calls = run_calls(session)
    # integers: every sum exact, in any order
    assert np.array_equal(session.run(None, {'image': images})[0], whole)
    assert calls == [[2], [2], [1]]


@pytest.mark.parametrize('kind', ['fixed batch', 'two inputs', 'one row for the batch'])
def test_other_graphs_run_every_batch_whole(tmp_path, monkeypatch, kind):
    monkeypatch.setattr(run_mode, 'INFERENCE_CHUNK_BYTES', 1)  # else one image a run
    path = wide_graph(tmp_path / 'graph.onnx', batch=5 if kind == 'fixed batch' else 'batch',
                      proposals=kind == 'two inputs', summed=kind == 'one row for the batch')
    session = open_graph(path)
    feeds = {'image': np.arange(15, dtype=np.float32).reshape(5, 3) % 4}
    if kind == 'two inputs':
        feeds['proposals'] = np.ones((5, 2), np.float32)
    expected = session.session.run(None, feeds)
    calls = run_calls(session)
    assert np.array_equal(session.run(None, feeds)[0], expected[0])
    assert np.array_equal(session.run(None, feeds)[0], expected[0])
    assert session.chunks.images_per_run((3, )) is None
    assert calls == [[5] * len(feeds)] * 2
