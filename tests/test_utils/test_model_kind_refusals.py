"""A graph or a deploy config of another kind of model than the config's, one line naming both (moved from
tests/tools/test_bad_inputs_probe.py, which keeps one row a tool)."""
import pytest
from mmengine.config import Config

from mmrmt.utils import PreflightError
from mmrmt.utils.model_kind import check_graph_fits_config
from helpers.onnx_graphs import matmul_graph, two_stage_like_graph
from helpers.tool_modules import REPO, import_tool

check_deploy_config_fits = import_tool('tools/deployment/mmdeploy_deploy.py').check_deploy_config_fits

RPN = dict(type='RPNHead')
MODELS = {
    'masks': dict(type='MaskRCNN', rpn_head=RPN, roi_head=dict(type='StandardRoIHead', mask_head=dict(type='M'))),
    'two': dict(type='FasterRCNN', rpn_head=RPN, roi_head=dict(type='StandardRoIHead')),
    'single': dict(type='RetinaNet', bbox_head=dict(type='RetinaHead')),
    'seg': dict(type='EncoderDecoder', decode_head=dict(type='UPerHead')),
}


def refusal(check, *args) -> str:
    with pytest.raises(PreflightError) as refused:
        check(*args)
    return str(refused.value)


@pytest.mark.parametrize('graph,model,graph_kind,config_kind', [
    ('single', 'masks', 'single-stage detector', 'two-stage detector with masks (MaskRCNN)'),
    ('two', 'single', 'two-stage detector without masks', 'single-stage detector (RetinaNet)'),
    ('two', 'masks', 'two-stage detector without masks', 'two-stage detector with masks (MaskRCNN)'),
    ('single', 'seg', 'single-stage detector', 'segmentor (EncoderDecoder)'),
    ('backbone', 'seg', 'backbone', 'segmentor (EncoderDecoder)'),  # a --backbone-only export, for test_onnx.py
])
def test_a_graph_of_another_kind(graph, model, graph_kind, config_kind, tmp_path):
    pytest.importorskip('onnx')
    path = (two_stage_like_graph(tmp_path / 'g.onnx') if graph == 'two'
            else matmul_graph(tmp_path / 'g.onnx', output='head_0_0' if graph == 'single' else 'feature_0'))
    assert refusal(check_graph_fits_config, str(path), Config(dict(model=MODELS[model])), 'm.py') == (
        f'{path} is the graph of a {graph_kind}, but m.py describes a {config_kind}: give the config the graph was '
        "exported from, or export this config's model with tools/deployment/pytorch2onnx.py")


@pytest.mark.parametrize('deploy,model,line', [
    ('detection_onnxruntime_static.py', 'masks', 'converts detectors without masks (outputs dets, labels), but m.py '
     '(MaskRCNN) has a mask head: use {deploy}/instance-seg_onnxruntime_static.py'),
    ('instance-seg_onnxruntime_static-800x1344.py', 'single', 'converts detectors with masks (outputs dets, labels, '
     'masks), but m.py (RetinaNet) has no mask head: use {deploy}/detection_onnxruntime_static-800x1344.py'),
])
def test_a_deploy_config_of_the_other_detector_kind(deploy, model, line):
    folder = REPO / 'configs' / 'deploy'
    deploy_cfg = Config.fromfile(str(folder / deploy))
    fitting = Config(dict(model=MODELS['two' if model == 'masks' else 'masks']))
    check_deploy_config_fits(deploy_cfg, str(folder / deploy), fitting, 'm.py')
    assert refusal(check_deploy_config_fits, deploy_cfg, str(folder / deploy), Config(dict(model=MODELS[model])),
                   'm.py') == f'{folder / deploy} ' + line.format(deploy=folder)
