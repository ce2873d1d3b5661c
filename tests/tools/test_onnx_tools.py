"""tools/deployment/test_onnx.py, quantize_onnx.py and profile_onnx.py as a user runs them (tiny RMT
configs, demo data): metrics of a graph, an int8 file, a profile; bad inputs are one line, nothing written
(the rows of test_bad_inputs_probe.py).

The runs that compute something are subprocesses, as users run the tools; the graphs they read are exported
in this process by pytorch2onnx's main (the exports are tested in test_pytorch2onnx)."""
import pickle
import re
from pathlib import Path

import onnx
import pytest
import torch
from mmdet.registry import MODELS
from mmengine.config import Config
from pycocotools import mask as mask_utils

from helpers.openvino_refusal import refused_by_the_tool
from helpers.rounding import assert_close
from helpers.runtime_bounds import float32_pair_tolerance
from helpers.tool_modules import import_tool
from tool_process import DET_CONFIG, REPO, check_ok, det_data_options, exit_message, metric, run_script, run_tool

pytorch2onnx = import_tool('tools/deployment/pytorch2onnx.py')
TEST_ONNX, QUANTIZE = 'deployment/test_onnx.py', 'deployment/quantize_onnx.py'


def export(*args) -> None:
    """tools/deployment/pytorch2onnx.py run in this process (its output is not what these tests check)."""
    pytorch2onnx.main([str(arg) for arg in args])


@pytest.fixture(scope='module')
def graphs(tmp_path_factory):
    """The tiny Mask R-CNN (fixed 64x64, its test size) and its backbone (batch 2, 64x64), exported."""
    folder = tmp_path_factory.mktemp('graphs')
    export(DET_CONFIG, '--shape', 64, 64, '--out', folder / 'det.onnx')
    export(DET_CONFIG, '--shape', 64, 64, '--batch', 2, '--backbone-only', '--out', folder / 'backbone.onnx')
    return folder


def last_line(result) -> str:
    assert result.returncode != 0
    return result.stderr.strip().splitlines()[-1]


def test_quantize_a_backbone_on_a_folder_of_images_skipping_a_corrupt_one(graphs, demo_root, tmp_path, monkeypatch,
                                                                          capsys):
    images, out = tmp_path / 'images', tmp_path / 'int8.onnx'
    images.mkdir()
    good = sorted((demo_root / 'coco' / 'val').glob('*.jpg'))[:4]
    for path in good:
        (images / path.name).write_bytes(path.read_bytes())
    (images / '0_corrupt.jpg').write_bytes(good[0].read_bytes()[:300])  # cut short: sorted first
    args = [graphs / 'backbone.onnx', '--config', DET_CONFIG, '--images', images, '--count', 4, '--out', out]
    result = run_tool([QUANTIZE, *args], timeout=900)
    check_ok(result)
    assert f'calibration: skipped {images / "0_corrupt.jpg"}, not a readable image (' in result.stdout + result.stderr
    assert re.search(r'^kept in float: \d+ node\(s\), products of two activations \(attention\)$',
                     result.stdout, re.M)
    # the tiny RMT's four blocks rotate q and k with a pair swap each
    assert re.search(r"^kept in float: 8 node\(s\), products by a constant permutation \(the rotary's pair swap\)$",
                     result.stdout, re.M)
    graph = onnx.load(str(out)).graph
    assert any(node.op_type == 'QuantizeLinear' for node in graph.node)
    assert [dim.dim_value for dim in graph.input[0].type.tensor_type.shape.dim] == [2, 3, 64, 64]
    assert exit_message(QUANTIZE, args, monkeypatch, capsys) == (
        f'error: --out {out} exists; choose another path, or add --force to replace it')


def test_profile_lists_op_types(graphs):
    result = run_tool(['deployment/profile_onnx.py', graphs / 'backbone.onnx', '--runs', 1, '--top', 5])
    check_ok(result)
    rows = re.findall(r'^\| (\w+) \| ([\d.]+) \| ([\d.]+) % \|', result.stdout, re.M)
    assert [op for op, _, _ in rows][-1] == 'all' and len(rows) == 6
    shares = [float(share) for _, _, share in rows[:-1]]
    # shares of the whole, each printed to 0.1 %: rounded by at most 0.05 % each
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 100 + 0.05 * len(shares)
    assert {'Gemm', 'Conv'} & {op for op, _, _ in rows}


def reported_metrics(output: str, label: str) -> dict:
    """The metrics test_onnx.py printed on its '... in LABEL: name value, ...' line."""
    line = re.search(rf'^\S+ in {label}: (.+)$', output, re.M).group(1)
    return {name: float(value) for name, value in re.findall(r'(coco/\w+) (-?[\d.]+)', line)}


def assert_same_predictions(graph_out: Path, torch_out: Path) -> None:
    """The predictions test_onnx.py --out dumped equal tools/test.py --out's, image by image: the same
    labels, and boxes, scores and mask pixels within two float32 runs' difference of the model
    (:func:`helpers.runtime_bounds.float32_pair_tolerance`, relative to the image side for boxes)."""
    graph_predictions, torch_predictions = (pickle.loads(path.read_bytes()) for path in (graph_out, torch_out))
    assert [p['img_id'] for p in graph_predictions] == [p['img_id'] for p in torch_predictions]
    tolerance = float32_pair_tolerance(MODELS.build(Config.fromfile(DET_CONFIG).model))
    boxes = 0
    for graph, reference in zip(graph_predictions, torch_predictions):
        got, expected = graph['pred_instances'], reference['pred_instances']
        assert torch.equal(got['labels'], expected['labels'])
        assert_close(got['bboxes'], expected['bboxes'], tolerance, scale=max(reference['ori_shape']))
        assert_close(got['scores'], expected['scores'], tolerance, scale=1.)
        got_masks, expected_masks = (mask_utils.decode(masks) for masks in (got['masks'], expected['masks']))
        # a pixel flips only where its probability lies within the tolerance of the 0.5 threshold
        assert (got_masks != expected_masks).mean() <= 2 * tolerance
        boxes += len(expected['bboxes'])
    assert boxes > 0  # something was detected: the comparison is not of empty predictions


def test_openvino_f32_predicts_and_scores_as_tools_test_does(det_work_dir, det_test_run, demo_root, tmp_path):
    """The trained detector's graph in OpenVINO (f32) predicts and scores what tools/test.py does in torch
    (test_onnx.py --out dumps its predictions as tools/test.py --out does)."""
    graph = tmp_path / 'trained.onnx'
    export(DET_CONFIG, '--weights', det_work_dir / 'iter_4.pth', '--shape', 64, 64, '--out', graph)
    out = tmp_path / 'openvino.pkl'
    result = run_tool([TEST_ONNX, DET_CONFIG, graph, '--runtime', 'openvino', '--work-dir', tmp_path / 'work',
                       '--out', out, '--cfg-options', *det_data_options(demo_root)], timeout=900)
    if refused_by_the_tool(result):
        assert not (tmp_path / 'work').exists() and not out.exists()
        return
    check_ok(result)
    assert_same_predictions(out, det_test_run.out)
    got = reported_metrics(result.stdout, 'openvino f32')
    expected = {name: metric(det_test_run.stdout, name) for name in got}
    assert {'coco/bbox_mAP', 'coco/bbox_mAP_50', 'coco/segm_mAP'} <= set(got)
    # the same predictions rank every box alike: the same metrics, to the printed digits
    assert got == pytest.approx(expected, abs=1e-4), (got, expected)


#: Runs a tool's main (argv[1], its arguments after it), then says how many child processes are left.
MAIN_THEN_CHILDREN = """
import multiprocessing, runpy, sys
from pathlib import Path
tool, args = sys.argv[1], sys.argv[2:]
sys.path.insert(0, str(Path(tool).parent))
runpy.run_path(tool)['main'](args)
print('children left:', len(multiprocessing.active_children()))
"""


def test_test_onnx_reports_the_test_metrics_and_shuts_its_loader_workers_down(graphs, demo_root, tmp_path):
    """The graph's test metrics, printed on one line. mmdet's and mmseg's configs keep their test loader's
    workers (persistent_workers=True). Left alive until the interpreter exits, their shutdown came after
    OpenVINO's int8 model had gone and test_onnx.py segfaulted (exit 139, after printing the metrics: AMD
    Zen 4, the demo's int8 graph); they are shut down when the evaluation ends. (Run in a child: loader
    workers forked inside a test process would leave torch's SIGCHLD handler there, which crashed later
    tests' subprocesses.)"""
    script = tmp_path / 'main_then_children.py'
    script.write_text(MAIN_THEN_CHILDREN)
    result = run_script(script, [REPO / 'tools' / TEST_ONNX, DET_CONFIG, graphs / 'det.onnx', '--work-dir',
                                 tmp_path / 'work', '--cfg-options', *det_data_options(demo_root),
                                 'test_dataloader.num_workers=1', 'test_dataloader.persistent_workers=True'],
                        timeout=900)
    check_ok(result)
    metrics = re.search(r'^\S+det\.onnx in onnxruntime: (.+)$', result.stdout, re.M).group(1)
    assert re.match(r'coco/bbox_mAP -?[\d.]+, coco/bbox_mAP_50 .+, coco/segm_mAP -?[\d.]+', metrics), metrics
    assert result.stdout.strip().splitlines()[-1] == 'children left: 0', result.stdout[-2000:]
