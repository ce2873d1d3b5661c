"""mmrmt.deployment.runtime.two_stage: a two-stage detector's graph in OpenVINO bf16 runs its RoI part (box
coordinates, level mapping, RoIAlign, heads) in f32, so that bf16 never rounds the boxes; the parts chained
answer as the whole graph does."""
import os

import onnx
import pytest
import torch
from mmengine.config import Config

from mmrmt.deployment.export import TensorModeModel, export_onnx
from mmrmt.deployment.runtime import (RuntimeChoiceError, TwoStageSessions, graph_session, open_graph, open_session,
                                      run_session)
from mmrmt.deployment.runtime.graph_session import openvino_capabilities
from mmrmt.utils.model_from_config import build_cpu_model
from helpers.openvino_refusal import refused_in_process
from helpers.rounding import assert_close
from helpers.runtime_bounds import assert_runtime_within_format, float32_pair_tolerance
from helpers.tool_modules import import_tool

DET_CONFIG = import_tool('tests/tools/tool_process.py').DET_CONFIG
HEIGHT, WIDTH = 256, 384


def small_boxes_far_out(count: int = 24) -> torch.Tensor:
    """Boxes of 3-6 pixels in the image's far half, where bf16 (8 significant bits) spaces
    coordinates 1-2 pixels apart: rounded, each would pool another window."""
    generator = torch.Generator().manual_seed(1)
    start = torch.tensor([WIDTH / 2, HEIGHT / 2]) + torch.rand(count, 2, generator=generator) * torch.tensor(
        [WIDTH / 2 - 8, HEIGHT / 2 - 8])
    return torch.cat((start, start + 3 + 3 * torch.rand(count, 1, generator=generator)), 1)


@pytest.fixture(scope='module')
def two_stage(tmp_path_factory):
    """The tiny Mask R-CNN in tensor mode with initialised weights, its graph, and inputs."""
    cfg = Config.fromfile(str(DET_CONFIG))
    cfg.model.backbone.pop('init_cfg', None)
    torch.manual_seed(0)
    detector = build_cpu_model(cfg)
    detector.init_weights()
    model = TensorModeModel(detector.eval())
    path = str(tmp_path_factory.mktemp('two_stage') / 'mask_rcnn.onnx')
    image = torch.randn(1, 3, HEIGHT, WIDTH, generator=torch.Generator().manual_seed(2))
    export_onnx(model, (image, small_boxes_far_out()), path)
    return model, path, (image, small_boxes_far_out())


def opener(runtime: str):
    return lambda part, precision, shapes: open_session(part, runtime, precision, None, shapes)


def test_the_parts_chained_answer_as_the_whole_graph(two_stage):
    model, path, inputs = two_stage
    sessions = TwoStageSessions(onnx.load(path), 'f32', opener('onnxruntime'))
    whole = open_graph(path)
    assert [port.name for port in sessions.get_inputs()] == ['image', 'proposals']
    assert [port.name for port in sessions.get_outputs()] == [port.name for port in whole.get_outputs()]
    tolerance = float32_pair_tolerance(model)
    for ours, theirs in zip(run_session(sessions, inputs), run_session(whole, inputs), strict=True):
        assert_close(torch.from_numpy(ours), torch.from_numpy(theirs), tolerance)
    roi_2, roi_0 = sessions.run(['roi_2', 'roi_0'], {'image': inputs[0].numpy(), 'proposals': inputs[1].numpy()})
    assert roi_2.shape == (24, 3, 28, 28) and roi_0.shape == (24, 4)


def test_openvino_bf16_keeps_the_roi_part_in_f32(two_stage):
    model, path, inputs = two_stage
    if refused_in_process(lambda: open_graph(path, 'openvino', 'bf16')):
        return
    if (os.environ.get('ONEDNN_MAX_CPU_ISA', '').upper() in graph_session.OPENVINO_NO_BF16_ISAS
            or 'BF16' not in openvino_capabilities()):  # bf16 refused in one line (test_runtimes.py)
        with pytest.raises(RuntimeChoiceError, match=r'^--precision bf16: '):
            open_graph(path, 'openvino', 'bf16')
        return
    session = open_graph(path, 'openvino', 'bf16').session
    precisions = [part.compiled.get_property('INFERENCE_PRECISION_HINT').get_type_name()
                  for part in (session.image_session, session.roi_session)]
    assert precisions == ['bf16', 'f32']
    # the RoI outputs are the f32 RoI part's (onnxruntime's here) on the bf16 image part's features
    feeds = {'image': inputs[0].numpy(), 'proposals': inputs[1].numpy()}
    names = [port.name for port in session.image_session.get_outputs()]
    features = dict(zip(names, session.image_session.run(None, {'image': feeds['image']})))
    reference = TwoStageSessions(onnx.load(path), 'f32', opener('onnxruntime')).roi_session
    expected = reference.run(None, {**{name: features[name] for name in session.cut}, 'proposals': feeds['proposals']})
    tolerance = float32_pair_tolerance(model)
    for ours, theirs in zip(session.run(['roi_0', 'roi_1', 'roi_2'], feeds), expected, strict=True):
        assert_close(torch.from_numpy(ours), torch.from_numpy(theirs), tolerance)
    # and the whole result within bf16's bound of the float64 forward
    assert_runtime_within_format(model, path, {'small boxes far out': inputs}, 'openvino', 'bf16')
