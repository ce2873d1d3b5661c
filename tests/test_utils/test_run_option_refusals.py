"""The run options a config cannot serve, one line each, from the tools that check them (moved from
tests/tools: --tta without a TTA model, --auto-scale-lr without a base batch size)."""
import pytest
from mmengine.config import Config

from mmrmt.utils import PreflightError
from helpers.tool_modules import import_tool

use_test_time_aug = import_tool('tools/test.py').use_test_time_aug
enable_auto_scale_lr = import_tool('tools/train.py').enable_auto_scale_lr


def test_tta_without_a_tta_model_or_pipeline():
    for given, missing in (({}, 'tta_model and tta_pipeline'), ({'tta_pipeline': [dict(type='X')]}, 'tta_model')):
        with pytest.raises(PreflightError) as refused:
            use_test_time_aug(Config(dict(model=dict(type='M'), **given)))
        assert str(refused.value) == (f"--tta needs {missing} in the config (as in configs/_base_/datasets/coco_tta.py "
                                      "or mmseg's ade20k.py)")


@pytest.mark.parametrize('auto_scale_lr', [None, dict(enable=False)])
def test_auto_scale_lr_without_a_base_batch_size(auto_scale_lr):
    with pytest.raises(PreflightError) as refused:
        enable_auto_scale_lr(Config(dict(auto_scale_lr=auto_scale_lr)))
    assert str(refused.value) == ('--auto-scale-lr needs auto_scale_lr = dict(base_batch_size=N) in the config: N, '
                                  'the total batch size its learning rate was set for')
