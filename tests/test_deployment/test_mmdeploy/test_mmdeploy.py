"""The mmdeploy route (tools/deployment/mmdeploy_deploy.py with configs/deploy/): RetinaNet (RMT,
ResT, ResMLP), Mask R-CNN (RMT) and UperNet become onnxruntime graphs whose predictions, through
mmdeploy's own onnxruntime backend model, are torch's; what mmdeploy would get wrong (an image that
does not fill a detector's input, an aligned RoIAlign below opset 16, another backend) is refused
in one line, and nothing is written.

Tiny backbones of each family and 64-160 px images keep the exports to seconds. Tolerances
(mmrmt/deployment/mmdeploy/parity.py): float32 rounds each op by 6e-8 of its result and the graphs'
raw outputs stay within 1e-5 of torch's, so a score 1e-4 off or a box 1e-3 of the image off is a
wrong graph; mask and class pixels on a tie may flip, far fewer than one in a thousand.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config

from mmrmt.deployment.mmdeploy import BOX_TOLERANCE, MIN_EQUAL_FRACTION, prediction_parity
from mmrmt.utils import build_cpu_model
from helpers.tool_modules import exit_line, import_tool

deploy_tool = import_tool('tools/deployment/mmdeploy_deploy.py')

REPO = Path(__file__).resolve().parents[3]
DEPLOY = REPO / 'configs' / 'deploy'
TEST_CONFIGS = REPO / 'tests' / 'data' / 'configs'

#: Classification layers whose weights the test scales (mmdet initialises them with std 0.01, which
#: gives near-equal scores: ties that a float32 rounding reorders), to logits of std about 1 over
#: anchors, and the bias the test gives them: RetinaNet's -6 leaves a few dozen (anchor, class)
#: scores above the 0.05 threshold (fewer than the 100 kept, so no cut among near-equal scores);
#: the RoI head's background logit +2 does the same for Mask R-CNN.
SPREAD = {'bbox_head.retina_cls': (30, lambda bias: torch.full_like(bias, -6.)),
          'rpn_head.rpn_cls': (30, lambda bias: bias),
          'roi_head.bbox_head.fc_cls': (40, lambda bias: torch.cat([torch.zeros_like(bias[:-1]), bias[-1:] + 2]))}


def spread_weights(config: Path, path: Path) -> None:
    """Save initialised weights of the config's model whose scores are spread out and distinct."""
    cfg = Config.fromfile(str(config))
    cfg.model.backbone.init_cfg = None
    torch.manual_seed(0)
    model = build_cpu_model(cfg, quiet=True)
    model.init_weights()
    state = model.state_dict()
    for name, (scale, bias) in SPREAD.items():
        if f'{name}.weight' in state:
            state[f'{name}.weight'] *= scale
            state[f'{name}.bias'] = bias(state[f'{name}.bias'])
    torch.save({'state_dict': state}, path)


@pytest.fixture(scope='module')
def image(tmp_path_factory) -> Path:
    """A 96x160 picture of noise: features, and so scores, differ from anchor to anchor."""
    picture = np.random.default_rng(0).integers(0, 256, (96, 160, 3), dtype=np.uint8)
    path = tmp_path_factory.mktemp('mmdeploy') / 'picture.png'
    cv2.imwrite(str(path), picture)
    return path


def derived_config(deploy_cfg: str, settings: str, path: Path) -> Path:
    """A deploy config at ``path`` that inherits configs/deploy/``deploy_cfg`` and sets ``settings`` (its lines)."""
    path.write_text(f"_base_ = ['{DEPLOY / deploy_cfg}']\n{settings}")
    return path


def filling(deploy_cfg: str, input_shape, tmp_path: Path) -> Path:
    """``deploy_cfg`` with ``onnx_config.input_shape`` (width, height) set: the image resized to fill the input."""
    if input_shape is None:
        return DEPLOY / deploy_cfg
    return derived_config(deploy_cfg, f'onnx_config = dict(input_shape={list(input_shape)})\n', tmp_path / deploy_cfg)


def refusal(deploy_cfg: Path, model_cfg: str, image: Path, tmp_path: Path) -> str:
    """The one line mmdeploy_deploy.py exits with for ``deploy_cfg`` and tests/data/configs/``model_cfg``."""
    return exit_line(deploy_tool.main, [deploy_cfg, TEST_CONFIGS / model_cfg, image, '--work-dir', tmp_path / 'work'])


def deploy(deploy_cfg: str, model_cfg: str, input_shape, image: Path, tmp_path: Path, capsys) -> str:
    """Run the route with spread weights; return what it printed about the graph it wrote."""
    weights = tmp_path / 'weights.pth'
    spread_weights(TEST_CONFIGS / model_cfg, weights)
    deploy_tool.main([str(filling(deploy_cfg, input_shape, tmp_path)), str(TEST_CONFIGS / model_cfg), str(image),
                      '--weights', str(weights), '--work-dir', str(tmp_path / 'work')])
    assert (tmp_path / 'work' / 'end2end.onnx').is_file()
    return capsys.readouterr().out


#: What the tool prints: the largest box difference / the image size, the share of equal pixels.
BOXES = re.compile(r'boxes within (\S+) of the image size')
PIXELS = re.compile(r'([\d.]+) % of pixels equal')


#: The detectors' inputs (width, height), which mmdeploy's test pipeline resizes the 96x160 picture to: small, and
#: multiples of the data preprocessor's 32, so nothing is padded. UperNet's graph has no boxes to clip.
@pytest.mark.parametrize('deploy_cfg, model_cfg, input_shape', [
    ('detection_onnxruntime_dynamic.py', 'retinanet_rmt-tiny_fpn_test.py', (96, 64)),
    ('detection_onnxruntime_static.py', 'retinanet_rest-tiny_fpn_test.py', (96, 64)),
    ('detection_onnxruntime_static.py', 'retinanet_resmlp-tiny_fpn_test.py', (96, 64)),
    ('instance-seg_onnxruntime_static.py', 'mask-rcnn_rmt-tiny_fpn_test.py', (64, 64)),
    ('segmentation_onnxruntime_dynamic.py', 'upernet_rmt-tiny_deploy_test.py', None),
], ids=['retinanet-rmt-dynamic', 'retinanet-rest', 'retinanet-resmlp', 'mask-rcnn-rmt', 'upernet-rmt-dynamic'])
def test_graph_predicts_what_torch_does(deploy_cfg, model_cfg, input_shape, image, tmp_path, capsys):
    """The graph, through mmdeploy's onnxruntime backend model, predicts torch's boxes, masks or classes."""
    out = deploy(deploy_cfg, model_cfg, input_shape, image, tmp_path, capsys)
    assert 'its predictions match torch' in out
    boxes, pixels = BOXES.search(out), PIXELS.search(out)
    if deploy_cfg.startswith('segmentation'):
        assert boxes is None and float(pixels.group(1)) >= 100 * MIN_EQUAL_FRACTION, out
        return
    assert boxes is not None and float(boxes.group(1)) <= BOX_TOLERANCE, out  # detections were compared
    if deploy_cfg.startswith('instance-seg'):
        assert float(pixels.group(1)) >= 100 * MIN_EQUAL_FRACTION, out


def test_image_that_does_not_fill_the_input_is_refused_before_converting(image, tmp_path):
    """The test pipeline makes the picture 38x64, padded to 64x64: mmdeploy's graph would clip the proposals and
    boxes to the padding (13 of Mask R-CNN's 20 detections differed); one line, nothing converted or written."""
    config = DEPLOY / 'instance-seg_onnxruntime_static.py'
    line = refusal(config, 'mask-rcnn_rmt-tiny_fpn_test.py', image, tmp_path)
    assert line == (f'error: {config}: the test pipeline makes {image} 38x64, padded to a 64x64 input: mmdeploy\'s '
                    'detector graphs clip boxes to their input, torch to the image, so their detections would differ; '
                    'set onnx_config.input_shape=[64, 64] (width, height: the image is then resized to fill the input)')
    assert not (tmp_path / 'work').exists()


@pytest.mark.parametrize('deploy_cfg, settings, model_cfg, message, work_dir', [
    ('instance-seg_onnxruntime_static.py', 'onnx_config = dict(opset_version=13, input_shape=[64, 64])\n',
     'mask-rcnn_rmt-tiny_fpn_test.py', "mmcv's RoIAlign(aligned=True) exports exactly only at opset 16 and later "
     '(ONNX RoiAlign half_pixel); the deploy config asks for opset 13: set onnx_config.opset_version=16', []),
    ('detection_onnxruntime_static.py', "backend_config = dict(type='tensorrt')\n", 'retinanet_rmt-tiny_fpn_test.py',
     "backend 'tensorrt' is not supported by this route (mmrmt registers its rewriters for onnxruntime only, and "
     "mmdeploy's defaults give other backends a wrong UperNet); use configs/deploy/*_onnxruntime_*.py", None),
], ids=['aligned-roi-align-below-opset-16', 'other-backend'])
def test_deploy_configs_the_route_cannot_convert_are_refused(deploy_cfg, settings, model_cfg, message, work_dir,
                                                             image, tmp_path):
    """mmdeploy's own opset (11) cannot express mmcv's aligned RoIAlign, and mmrmt's rewriters are registered
    for onnxruntime only: one line, nothing written (another backend is refused before anything is built)."""
    config = derived_config(deploy_cfg, settings, tmp_path / f'derived_{deploy_cfg}')
    assert refusal(config, model_cfg, image, tmp_path) == f'error: {config}: {message}'
    folder = tmp_path / 'work'
    assert (sorted(folder.iterdir()) if folder.exists() else None) == work_dir


def test_existing_graph_needs_force(image, tmp_path):
    (tmp_path / 'work').mkdir()
    (tmp_path / 'work' / 'end2end.onnx').write_bytes(b'mine')
    line = refusal(DEPLOY / 'segmentation_onnxruntime_static.py', 'upernet_rmt-tiny_test.py', image, tmp_path)
    assert line.startswith('error: the graph ') and '--force' in line
    assert (tmp_path / 'work' / 'end2end.onnx').read_bytes() == b'mine'


def test_model_config_of_another_codebase_is_refused(image, tmp_path):
    line = refusal(DEPLOY / 'segmentation_onnxruntime_static.py', 'retinanet_rmt-tiny_fpn_test.py', image, tmp_path)
    assert line == (f"error: {TEST_CONFIGS / 'retinanet_rmt-tiny_fpn_test.py'} is not an mmseg model config, "
                    f"which {DEPLOY / 'segmentation_onnxruntime_static.py'} converts")


def shifted(sample, shift: float):
    """A copy of ``sample`` with the first detection's x1 moved by ``shift`` pixels."""
    moved = sample.clone()
    moved.pred_instances = sample.pred_instances.clone()  # DetDataSample.clone shares its fields
    moved.pred_instances.bboxes = sample.pred_instances.bboxes.clone()
    moved.pred_instances.bboxes[0, 0] += shift
    return moved


def test_parity_catches_moved_boxes_and_flipped_pixels():
    """The comparison itself: a box 2e-3 of the image off, or 0.2 % of the pixels changed, is a wrong graph."""
    from mmdet.structures import DetDataSample
    from mmengine.structures import InstanceData, PixelData
    from mmseg.structures import SegDataSample
    expected = DetDataSample(metainfo=dict(ori_shape=(100, 200)))  # boxes within 0.2 px
    expected.pred_instances = InstanceData(bboxes=torch.tensor([[10., 10., 50., 60.], [0., 0., 20., 20.]]),
                                           scores=torch.tensor([0.9, 0.3]), labels=torch.tensor([1, 2]))
    assert prediction_parity([expected], [shifted(expected, 0.1)]).problems == []
    assert prediction_parity([expected], [shifted(expected, 0.4)]).problems == [
        "1 of torch's 2 detections have no graph detection with its label, a score within 0.001 and a box "
        'within 0.001 of the image size']
    fewer = expected.clone()
    fewer.pred_instances = expected.pred_instances[:1]
    assert 'torch finds 2 detections, the graph 1' in prediction_parity([expected], [fewer]).problems

    labels = torch.zeros(1, 40, 50, dtype=torch.long)  # 2000 pixels: 2 may differ, 3 may not
    segmentation = SegDataSample(pred_sem_seg=PixelData(data=labels))
    for changed, right in ((2, True), (3, False)):
        other = labels.clone()
        other.view(-1)[:changed] = 1
        problems = prediction_parity([segmentation], [SegDataSample(pred_sem_seg=PixelData(data=other))]).problems
        assert (problems == []) == right, problems


@pytest.mark.parametrize('deploy_cfg,fixed', [('detection_onnxruntime_static.py', True),
                                              ('detection_onnxruntime_dynamic.py', False)])
def test_static_deploy_configs_convert_to_graphs_of_fixed_shapes(deploy_cfg, fixed, monkeypatch):
    """A static config's graph takes one size: its attention may take the queries a few at a time
    (fixed_shape_export); a dynamic config's must not."""
    import mmdeploy.apis

    from mmrmt.deployment.export import fixed_shapes
    from mmrmt.deployment.mmdeploy import convert
    monkeypatch.setattr(fixed_shapes, 'is_exporting', lambda: True)  # what the layers see while mmdeploy exports
    seen = []
    monkeypatch.setattr(mmdeploy.apis, 'torch2onnx', lambda *args: seen.append(fixed_shapes.exports_fixed_shapes()))
    convert(Config.fromfile(str(DEPLOY / deploy_cfg)), Config(), 'image.jpg', 'work_dir')
    assert seen == [fixed]
    assert not fixed_shapes.exports_fixed_shapes()


#: What mmdeploy's own tools/deploy.py does to convert (the pip package does not ship the script).
MMDEPLOY_OWN_ROUTE = '''
import sys
from mmdeploy.apis import torch2onnx
deploy_cfg, model_cfg, image, work_dir, weights = sys.argv[1:]
torch2onnx(image, work_dir, 'end2end.onnx', deploy_cfg, model_cfg, weights, 'cpu')
'''


def test_mmdeploy_s_own_route_with_custom_imports_predicts_what_torch_does(image, tmp_path):
    """mmdeploy's ``torch2onnx`` in a process of its own, with a model config holding
    ``custom_imports=dict(imports=['mmrmt'])`` (ours do): importing mmrmt there registers its rewriters, so the
    graph predicts what torch does (issue 49: the dynamo exporter, torch 2.14's default, rejected mmdeploy's
    dynamic axes)."""
    from mmrmt.deployment.mmdeploy import compare_with_torch
    model_cfg, weights, work_dir = TEST_CONFIGS / 'retinanet_rmt-tiny_fpn_test.py', tmp_path / 'w.pth', tmp_path / 'w'
    assert 'mmrmt' in Config.fromfile(str(model_cfg)).custom_imports.imports
    spread_weights(model_cfg, weights)
    deploy_cfg = filling('detection_onnxruntime_dynamic.py', (96, 64), tmp_path)
    arguments = [str(path) for path in (deploy_cfg, model_cfg, image, work_dir, weights)]
    converted = subprocess.run([sys.executable, '-c', MMDEPLOY_OWN_ROUTE, *arguments], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert converted.returncode == 0, converted.stderr[-3000:]
    parity = compare_with_torch(Config.fromfile(str(deploy_cfg)), Config.fromfile(str(model_cfg)),
                                str(work_dir / 'end2end.onnx'), str(image), str(weights))
    assert parity.problems == [] and parity.box_error is not None, parity.summary()  # detections compared
