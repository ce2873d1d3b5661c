"""tools/deployment/pytorch2onnx.py end to end: a backbone export with --weights and --force, a two-stage
detector's note on its exact RoIs, --verify in OpenVINO, and benchmark.py timing or refusing the file; a
wrong config, missing or unfitting weights, or an output it may not write end it with one line, before
anything is built or written (rows of test_bad_inputs_probe.py). The whole-model export matrix (both
exporters, mmdeploy's opset, Cascade R-CNN) is the library's: test_deployment/test_export/test_whole_model_export.py.

The exports run the tool's ``main()`` in this process (a refused setting or a failed --verify raises);
benchmark.py runs as a user runs it, in a subprocess."""
import re

import onnx
import torch

from helpers.openvino_refusal import refused_in_process
from helpers.tool_modules import import_tool
from tool_process import DET_CONFIG, check_ok, run_tool

pytorch2onnx = import_tool('tools/deployment/pytorch2onnx.py')

#: --verify's own threshold, which its exit status says held (the tool's --help says why it is 1e-4; the
#: graphs' bounds derived from float64 are tests/test_deployment's, helpers/runtime_bounds.py)
VERIFY_TOLERANCE = pytorch2onnx.DEFAULT_TOLERANCE['f32']
DIFFERENCE = re.compile(r'^onnxruntime vs torch, max \|difference\| / max \|value\|: (\S+) \((.+)\)$', re.M)


def export(args, capsys) -> str:
    """Run the tool's ``main(args)`` in this process; return what it printed."""
    pytorch2onnx.main([str(arg) for arg in args])
    return capsys.readouterr().out


def test_two_stage_export_at_mmdeploys_opset_says_its_exact_roi_side(tmp_path, capsys):
    """mmdeploy's default opset 11: below opset 16 Mask R-CNN's RoI pooling is exact for RoIs of sides >= 4 px,
    which the tool says and verifies (fixed 64x96; the other whole models: test_whole_model_export.py)."""
    out, opset = tmp_path / 'model.onnx', 11
    printed = export([DET_CONFIG, '--shape', 64, 96, '--opset', opset, '--out', out, '--verify'], capsys)
    assert f'torchscript exporter, opset {opset}, fixed two_stage graph' in printed
    assert 'pools as torch RoIs of sides >= 4 px' in printed
    differences = [float(value) for value, _ in DIFFERENCE.findall(printed)]
    assert len(differences) == 2 and max(differences) <= VERIFY_TOLERANCE, printed
    model = onnx.load(str(out), load_external_data=False)
    assert [entry.version for entry in model.opset_import if entry.domain in ('', 'ai.onnx')] == [opset]


def test_benchmark_times_the_exported_file_beside_torch(tmp_path, capsys):
    out = tmp_path / 'backbone.onnx'
    assert f'wrote {out}' in export([DET_CONFIG, '--shape', 64, 64, '--dynamic', '--backbone-only', '--out', out],
                                    capsys)
    result = run_tool(['analysis_tools/benchmark.py', DET_CONFIG, '--impl', 'fast', 'reference', '--batch', 2,
                       '--shape', 64, 96, '--mode', 'infer', '--repeats', 1, '--warmup', 0, '--onnx', out])
    check_ok(result)
    rows = re.findall(r'^\| ([^|]+?) \| infer \| ([\d.]+) \|', result.stdout, re.M)
    assert [impl for impl, _ in rows] == ['fast', 'reference', f'onnxruntime {out}']
    assert all(float(seconds) > 0 for _, seconds in rows)
    assert f'tensor mode in torch and {out} in onnxruntime' in result.stdout


def test_fixed_size_backbone_export_with_weights_force_and_a_batch(tmp_path, capsys):
    """A fixed-size backbone export overwrites a file with --force and loads the given weights; --batch fixes
    the graph's batch, and benchmark.py refuses another batch in one line, before timing."""
    out = tmp_path / 'backbone.onnx'
    out.write_bytes(b'old')
    cfg = pytorch2onnx.preflight(pytorch2onnx.parse_args([str(DET_CONFIG), '--shape', '64', '64', '--out',
                                                          str(out), '--force']))
    weights = tmp_path / 'weights.pth'
    torch.save({'state_dict': pytorch2onnx.build_model(cfg, None).state_dict()}, weights)
    printed = export([DET_CONFIG, '--weights', weights, '--shape', 64, 64, '--batch', 3, '--backbone-only', '--out',
                      out, '--force', '--verify'], capsys)
    assert f'wrote {out}' in printed and 'fixed backbone graph' in printed
    assert 'random 64x64' in printed and 'demo picture 64x64' in printed
    assert out.read_bytes()[:3] != b'old'
    assert sorted(path.name for path in tmp_path.iterdir()) == ['backbone.onnx', 'weights.pth']
    image = onnx.load(str(out), load_external_data=False).graph.input[0]
    assert [dim.dim_value for dim in image.type.tensor_type.shape.dim] == [3, 3, 64, 64]
    result = run_tool(['analysis_tools/benchmark.py', '--backbone', 'rmt-t', '--batch', 2, '--shape', 64, 64,
                       '--mode', 'infer', '--repeats', 1, '--onnx', out])
    assert result.returncode != 0 and result.stdout == ''
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: --onnx {out} does not take --batch 2 --shape 64 64: input 'image' is 3x3x64x64, got "
        '2x3x64x64; export it at this batch and shape (pytorch2onnx.py --batch N --shape H W) or with --dynamic')


def test_verify_in_openvino_compares_with_torch(tmp_path, capsys):
    out = tmp_path / 'backbone.onnx'
    args = [str(DET_CONFIG), '--shape', '64', '96', '--dynamic', '--backbone-only', '--out', str(out), '--verify',
            '--runtime', 'openvino']
    if refused_in_process(lambda: pytorch2onnx.main(args)):
        assert not out.exists()
        return
    pytorch2onnx.main(args)
    printed = capsys.readouterr().out
    differences = {description: float(value) for value, description in re.findall(
        r'^openvino f32 vs torch, max \|difference\| / max \|value\|: (\S+) \((.+)\)$', printed, re.M)}
    assert set(differences) == {f'{kind} {size}' for kind in ('random', 'demo picture')
                                for size in ('64x96', '128x128', '77x123')}
    # float32 in another runtime: the same sums in another order, within --verify's threshold
    assert 0 < max(differences.values()) <= VERIFY_TOLERANCE, differences
