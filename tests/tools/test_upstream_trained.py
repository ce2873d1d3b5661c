"""tools/model_converters/rmt_upstream_trained_to_mmrmt.py on the authors' trained detectors (mmdet 2.x) and
segmentors (mmseg 0.x), as users run it: a file in the upstream layout (helpers/upstream_trained_models.py)
holding trained weights, converted, evaluates in tools/test.py as the original does and starts a fine-tuning
from ``load_from``; the converter checks before writing and never runs the file's saved config texts (every
config's outputs after the conversion: tests/test_checkpoint/test_upstream_trained_outputs.py).
"""
import pickle
from pathlib import Path

import pytest
import torch
from mmengine.config import Config

from mmrmt.checkpoint import load_weights_only
from mmrmt.utils import PreflightError, build_cpu_model
from helpers.code_in_checkpoint import with_code_in_saved_config
from helpers.tool_modules import import_tool
from helpers.upstream_trained_models import MMDET2, MMSEG0, trained_like_model, write_upstream_file
from tool_process import (DET_CONFIG, SEG_CONFIG, check_ok, det_data_options, load_checkpoint, metric, run_tool,
                          seg_data_options)

converter = import_tool('tools/model_converters/rmt_upstream_trained_to_mmrmt.py')


@pytest.fixture(scope='module')
def tiny_upstream_detector(tmp_path_factory) -> Path:
    """An upstream-layout Mask R-CNN file of the tiny test detector."""
    path = tmp_path_factory.mktemp('upstream') / 'maskrcnn_tiny.pth'
    write_upstream_file(trained_like_model(DET_CONFIG), DET_CONFIG, MMDET2, path)
    return path


def test_converter_checks_before_writing(tiny_upstream_detector, tmp_path):
    src, dst = tiny_upstream_detector, tmp_path / 'ours.pth'
    dst.write_bytes(b'keep me')
    with pytest.raises(PreflightError, match='exists; choose another path, or add --force'):
        converter.main([str(src), str(dst), '--config', str(DET_CONFIG)])
    with pytest.raises(PreflightError, match='is the source .*not even with --force'):
        converter.main([str(src), str(src), '--config', str(DET_CONFIG), '--force'])
    with pytest.raises(PreflightError, match=r'unexpected keys, of the .*RPNHead.*; .*'
                                             r'missing keys \(auxiliary_head'):
        converter.main([str(src), str(dst), '--config', str(SEG_CONFIG), '--force'])
    assert dst.read_bytes() == b'keep me' and sorted(p.name for p in tmp_path.iterdir()) == ['ours.pth']
    converter.main([str(src), str(dst), '--config', str(DET_CONFIG), '--force'])
    assert 'state_dict' in load_checkpoint(dst)


def test_the_saved_config_texts_are_never_run(tiny_upstream_detector, tmp_path):
    marker, source = tmp_path / 'PWNED', tmp_path / 'upstream.pth'
    torch.save(with_code_in_saved_config(load_weights_only(tiny_upstream_detector), marker), source)
    converter.main([str(source), str(tmp_path / 'ours.pth'), '--config', str(DET_CONFIG)])
    assert 'state_dict' in load_checkpoint(tmp_path / 'ours.pth') and not marker.exists()


def evaluate(checkpoint: Path, demo_root: Path, out_dir: Path) -> tuple:
    """tools/test.py on the tiny detector: (printed bbox mAP, dumped predictions)."""
    result = run_tool(['test.py', DET_CONFIG, checkpoint, '--work-dir', out_dir, '--out', out_dir / 'preds.pkl',
                       '--cfg-options', *det_data_options(demo_root)])
    check_ok(result)
    return metric(result.stdout, 'coco/bbox_mAP'), pickle.loads((out_dir / 'preds.pkl').read_bytes())


def test_tools_test_evaluates_a_converted_file_like_the_original(det_work_dir, det_test_run, demo_root,
                                                                 tmp_path):
    """Trained weights (the shared 4-iteration run) in the upstream layout,
    converted or not, evaluate to the predictions and mAP of the original
    (the shared evaluation of that run)."""
    trained = build_cpu_model(Config.fromfile(str(DET_CONFIG)))
    trained.load_state_dict(load_checkpoint(det_work_dir / 'iter_4.pth')['state_dict'])
    upstream = write_upstream_file(trained, DET_CONFIG, MMDET2, tmp_path / 'upstream.pth')
    converter.main([str(tmp_path / 'upstream.pth'), str(tmp_path / 'ours.pth'), '--config', str(DET_CONFIG)])
    assert load_checkpoint(tmp_path / 'ours.pth')['meta']['dataset_meta']['classes'] == tuple(
        upstream['meta']['CLASSES'])
    original_map = metric(det_test_run.stdout, 'coco/bbox_mAP')
    original = pickle.loads(det_test_run.out.read_bytes())
    assert len(original) == 8 and sum(len(image['pred_instances']['scores']) for image in original) > 0
    # Mask R-CNN's keys match: the upstream file also evaluates as it is.
    for checkpoint in (tmp_path / 'ours.pth', tmp_path / 'upstream.pth'):
        bbox_map, predictions = evaluate(checkpoint, demo_root, tmp_path / checkpoint.stem)
        assert bbox_map == original_map
        for want, got in zip(original, predictions, strict=True):
            for field in ('bboxes', 'scores', 'labels'):
                assert torch.equal(torch.as_tensor(want['pred_instances'][field]),
                                   torch.as_tensor(got['pred_instances'][field]))


def test_load_from_starts_fine_tuning_from_a_converted_file(demo_root, tmp_path):
    """One training iteration at learning rate 0 from ``load_from``: the
    checkpoint it writes holds the converted weights (BN statistics move)."""
    model = trained_like_model(SEG_CONFIG)
    write_upstream_file(model, SEG_CONFIG, MMSEG0, tmp_path / 'upstream.pth')
    converter.main([str(tmp_path / 'upstream.pth'), str(tmp_path / 'ours.pth'), '--config', str(SEG_CONFIG)])
    check_ok(run_tool(['train.py', SEG_CONFIG, '--work-dir', tmp_path / 'work', '--cfg-options',
                       f'load_from={tmp_path / "ours.pth"}', 'train_cfg.max_iters=1', 'train_cfg.val_interval=100',
                       'optim_wrapper.optimizer.lr=0', *seg_data_options(demo_root)]))
    after = load_checkpoint(tmp_path / 'work' / 'iter_1.pth')['state_dict']
    weights = {key: value for key, value in model.state_dict().items()
               if not key.endswith(('running_mean', 'running_var', 'num_batches_tracked'))}
    assert set(weights) <= set(after)
    for key, value in weights.items():
        assert torch.equal(after[key], value), key
