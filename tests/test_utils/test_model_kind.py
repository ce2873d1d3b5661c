"""model_kind: the task of a detector or segmentor read alike from a config's model dict and a built
model; config_model_kind adds the masks of a two-stage detector; config_scope: the library, the one reader of
``default_scope`` for every tool."""
import pytest
from mmengine.config import Config
from torch import nn

from mmrmt.utils import PreflightError
from mmrmt.utils.model_kind import config_model_kind, config_scope, model_kind

TWO_STAGE = dict(type='MaskRCNN', rpn_head=dict(type='RPNHead'), roi_head=dict(type='StandardRoIHead'))
KINDS = [
    (TWO_STAGE, 'two_stage'),
    (dict(type='RetinaNet', bbox_head=dict(type='RetinaHead')), 'single_stage'),
    (dict(type='EncoderDecoder', decode_head=dict(type='UPerHead')), 'segmentor'),
    (dict(type='RMT'), None),
    (dict(type='X', rpn_head=dict(type='RPNHead')), None),  # an RPN alone is no two-stage detector
]


@pytest.mark.parametrize('model,kind', KINDS)
def test_a_config_and_a_built_model_read_alike(model, kind):
    assert model_kind(model) == kind
    built = nn.Module()
    for head in (key for key in model if key.endswith('_head')):
        setattr(built, head, nn.Identity())
    assert model_kind(built) == kind


def test_the_masks_of_a_two_stage_config():
    with_masks = dict(TWO_STAGE, roi_head=dict(type='StandardRoIHead', mask_head=dict(type='FCNMaskHead')))
    assert config_model_kind(Config(dict(model=with_masks))) == 'two_stage+masks'
    assert config_model_kind(Config(dict(model=TWO_STAGE))) == 'two_stage'
    assert config_model_kind(Config(dict())) is None


def test_a_graph_pytorch2onnx_never_writes_is_refused_for_a_config(tmp_path):
    """A foreign graph taking ``image`` passed tools/deployment/test_onnx.py's checks and crashed inside mmdet
    (issue 49): one line naming its ports and those of the config's graph."""
    from mmrmt.utils import PreflightError
    from mmrmt.utils.model_kind import check_graph_fits_config
    from helpers.onnx_graphs import matmul_graph
    pytest.importorskip('onnx')
    foreign = matmul_graph(tmp_path / 'foreign.onnx', output='logits')
    cfg = Config(dict(model=dict(TWO_STAGE, type='MaskRCNN')))
    with pytest.raises(PreflightError) as refused:
        check_graph_fits_config(str(foreign), cfg, 'det.py')
    assert str(refused.value) == (
        f"{foreign} is no graph of tools/deployment/pytorch2onnx.py (inputs ['image'], outputs ['logits']); the "
        "graph of det.py, a two-stage detector without masks, takes 'image' and 'proposals' and returns rpn_* and "
        'roi_*: export it with tools/deployment/pytorch2onnx.py')
    check_graph_fits_config(str(foreign), Config(dict(model=dict(type='ImageClassifier'))), 'cls.py')  # no kind
    check_graph_fits_config(str(matmul_graph(tmp_path / 'seg.onnx', output='seg_logits')),
                            Config(dict(model=dict(type='EncoderDecoder', decode_head=dict(type='UPerHead')))),
                            'seg.py')


@pytest.mark.parametrize('output,line', [
    ('logits', "is no graph of tools/deployment/pytorch2onnx.py (inputs ['image'], outputs ['logits']); the graph of"),
    ('feature_0', 'is the graph of a backbone, but '),  # a --backbone-only export
])
def test_test_onnx_refuses_a_foreign_graph_before_building(output, line, tmp_path):
    from helpers.onnx_graphs import matmul_graph
    from helpers.tool_modules import REPO, exit_line, import_tool
    pytest.importorskip('onnxruntime')
    foreign = matmul_graph(tmp_path / 'foreign.onnx', output=output)
    config = REPO / 'tests' / 'data' / 'configs' / 'upernet_rmt-tiny_test.py'
    said = exit_line(import_tool('tools/deployment/test_onnx.py').main,
                     [config, foreign, '--work-dir', tmp_path / 'work'])
    assert said.startswith(f'error: {foreign} {line}'), said
    assert sorted(path.name for path in tmp_path.iterdir()) == ['foreign.onnx']


@pytest.mark.parametrize('scope', ['mmdet', 'mmseg'])
def test_the_library_of_a_config(scope):
    assert config_scope(Config(dict(default_scope=scope))) == scope


@pytest.mark.parametrize('settings', [dict(), dict(default_scope='mmpretrain')])
def test_a_config_of_no_library_of_ours_is_one_line_naming_the_fix(settings):
    with pytest.raises(PreflightError, match=r"^x.py is not an mmdet or mmseg model config \(default_scope .*\): "
                                             r"set default_scope = 'mmdet' \(a detector\) or 'mmseg' \(a segmentor\) "
                                             r"in it$"):
        config_scope(Config(settings), 'x.py')


def test_pytorch2onnx_reads_the_library_as_every_tool(tmp_path):
    """pytorch2onnx.py read ``default_scope`` itself and took a config without one for mmdet's."""
    from helpers.tool_modules import import_tool
    pytorch2onnx = import_tool('tools/deployment/pytorch2onnx.py')
    config = tmp_path / 'no_scope.py'
    config.write_text("model = dict(type='RetinaNet', bbox_head=dict(type='RetinaHead'))\n")
    args = pytorch2onnx.parse_args([str(config), '--shape', '64', '64', '--out', str(tmp_path / 'm.onnx')])
    with pytest.raises(PreflightError, match=f'^{config} is not an mmdet or mmseg model config '
                                             r'\(default_scope None\): set default_scope'):
        pytorch2onnx.preflight(args)
