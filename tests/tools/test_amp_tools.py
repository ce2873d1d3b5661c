"""--amp of tools/train.py, tools/test.py and demo/image_demo.py: bf16 autocast on a CPU with native bf16 (AVX-512
BF16 or AMX), --amp bf32 of the inference tools likewise (the one line refusing them on other CPUs:
tests/test_amp/test_tool_amp_refusals.py)."""
import json

import pytest
import torch

from mmrmt.cpu_features import cpu_features
from tool_process import DET_CONFIG, check_ok, det_data_options, load_checkpoint, metric, run_tool

IMAGE_DEMO = '../demo/image_demo.py'  # run_tool runs scripts relative to tools/
NATIVE_BF16_CPU = pytest.mark.skipif(torch.cuda.is_available() or not cpu_features().bf16,
                                     reason='--amp trains in bf16 on the CPU where it has native bf16 and no CUDA')


@pytest.fixture(scope='module')
def amp_work_dir(demo_root, tmp_path_factory):
    """A 4-iteration detection run with --amp (checkpoints at 2 and 4), no validation."""
    work_dir = tmp_path_factory.mktemp('amp_train')
    check_ok(run_tool(['train.py', DET_CONFIG, '--amp', '--work-dir', work_dir, '--cfg-options',
                       'train_cfg.val_interval=100', *det_data_options(demo_root)]))
    return work_dir


@NATIVE_BF16_CPU
def test_train_with_amp_on_a_bf16_cpu(amp_work_dir, det_work_dir):
    checkpoint = load_checkpoint(amp_work_dir / 'iter_4.pth')
    assert checkpoint['meta']['iter'] == 4 and 'loss_scaler' not in checkpoint['optimizer']
    config = next(amp_work_dir.glob('*/vis_data/config.py')).read_text()
    assert "type='CPUAmpOptimWrapper'" in config
    float32 = load_checkpoint(det_work_dir / 'iter_4.pth')['state_dict']
    assert checkpoint['state_dict'].keys() == float32.keys()
    assert all(torch.isfinite(weight).all() for weight in checkpoint['state_dict'].values())
    scalars = [json.loads(line) for line in next(amp_work_dir.glob('*/vis_data/scalars.json')).read_text().splitlines()]
    assert all(torch.isfinite(torch.tensor(record['loss'])) for record in scalars if 'loss' in record)


@NATIVE_BF16_CPU
def test_test_and_image_demo_with_amp_on_a_bf16_cpu(amp_work_dir, demo_root, tmp_path):
    result = run_tool(['test.py', DET_CONFIG, amp_work_dir / 'iter_4.pth', '--amp', '--work-dir', tmp_path / 'w',
                       '--cfg-options', *det_data_options(demo_root)])
    check_ok(result)
    assert 0.0 <= metric(result.stdout, 'coco/bbox_mAP_50') <= 1.0
    image = sorted((demo_root / 'coco' / 'val').glob('*.jpg'))[0]
    check_ok(run_tool([IMAGE_DEMO, image, DET_CONFIG, '--weights', amp_work_dir / 'iter_4.pth', '--amp',
                       '--out-dir', tmp_path / 'out', '--device', 'cpu', '--pred-score-thr', '0']))
    record = json.loads((tmp_path / 'out' / 'preds' / f'{image.stem}.json').read_text())
    assert len(record['scores']) == len(record['bboxes']) > 0
    check_ok(run_tool([IMAGE_DEMO, image, DET_CONFIG, '--weights', amp_work_dir / 'iter_4.pth', '--amp', 'bf32',
                       '--out-dir', tmp_path / 'bf32', '--device', 'cpu', '--pred-score-thr', '0']))
    bf32 = json.loads((tmp_path / 'bf32' / 'preds' / f'{image.stem}.json').read_text())
    assert len(bf32['scores']) == len(bf32['bboxes']) > 0
