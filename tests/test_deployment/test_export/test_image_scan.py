"""A fixed-batch graph computed a few images at a time inside the graph (ONNX Scan): same outputs."""
import numpy as np
import pytest
import torch

from mmrmt.deployment.export import TensorModeModel, export_onnx, scan_over_images
from mmrmt.deployment.runtime import onnxruntime_session, run_session
from mmrmt.models.backbones import RMT

pytest.importorskip('onnxruntime')


@pytest.fixture(scope='module')
def backbone() -> torch.nn.Module:
    torch.manual_seed(0)
    return RMT(arch='tiny', out_indices=(0, 1, 2, 3)).eval()


def test_scanned_graph_gives_each_image_the_whole_batch_graph_outputs(backbone, tmp_path):
    import onnx
    images = torch.randn(4, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    model = TensorModeModel(backbone, backbone_only=True)
    whole, scanned = tmp_path / 'whole.onnx', tmp_path / 'scanned.onnx'
    export_onnx(model, (images, ), str(whole))
    export_onnx(model, (images, ), str(scanned), images_per_run=2)
    graph = onnx.load(str(scanned)).graph
    assert [node.op_type for node in graph.node if node.op_type == 'Scan'] == ['Scan']
    assert [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim] == [4, 3, 64, 64]
    expected = run_session(onnxruntime_session(str(whole)), [images])
    actual = run_session(onnxruntime_session(str(scanned)), [images])
    with torch.no_grad():
        reference = [t.numpy() for t in backbone(images)]
    for out, same, ref in zip(actual, expected, reference):
        assert out.shape == same.shape == ref.shape
        bound = 1e-5 * np.abs(ref).max()  # float32 sums in another order: far below a wrong image's error
        assert np.abs(out - ref).max() <= bound and np.abs(same - ref).max() <= bound


def test_a_chunk_that_does_not_divide_the_batch_is_refused(backbone, tmp_path):
    import onnx
    images = torch.randn(3, 3, 64, 64)
    path = tmp_path / 'three.onnx'
    export_onnx(TensorModeModel(backbone, backbone_only=True), (images, ), str(path))
    with pytest.raises(ValueError, match='3 images a run do not divide a batch of 4'):
        scan_over_images(onnx.load(str(path)), 4)
