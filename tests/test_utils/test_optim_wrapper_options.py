"""--cfg-options that change the optim wrapper's type: the other keys under it are checked against the new
type, and mmengine's AmpOptimWrapper without a device it runs on is one line before the run makes its work
dir (issue 49: the keys were checked against the config's OptimWrapper, and train.py ended in mmengine's
AssertionError traceback with a work dir left)."""
import sys

import pytest
from mmengine.config import Config

from mmrmt.utils import PreflightError, apply_cfg_options
from helpers.tool_modules import REPO, exit_line, import_tool

AMP_OPTIONS = ['optim_wrapper.type=AmpOptimWrapper', 'optim_wrapper.dtype=float16']


def sgd_config() -> Config:
    return Config(dict(default_scope='mmdet',
                       optim_wrapper=dict(type='OptimWrapper', optimizer=dict(type='SGD', lr=0.01))))


def test_keys_are_checked_against_the_type_the_same_options_set():
    cfg = apply_cfg_options(sgd_config(), AMP_OPTIONS)
    assert (cfg.optim_wrapper.type, cfg.optim_wrapper.dtype) == ('AmpOptimWrapper', 'float16')


def test_a_key_the_config_s_own_type_lacks_is_still_refused():
    with pytest.raises(PreflightError, match=r"^--cfg-options optim_wrapper.dtype: OptimWrapper \(optim_wrapper\) "
                                             r"has no 'dtype'"):
        apply_cfg_options(sgd_config(), AMP_OPTIONS[1:])


def no_accelerator(monkeypatch) -> None:
    import mmengine.device
    for name in ('is_cuda_available', 'is_npu_available', 'is_mlu_available', 'is_musa_available'):
        monkeypatch.setattr(mmengine.device, name, lambda: False)


def test_amp_optim_wrapper_without_a_device_is_one_line_before_the_work_dir(tmp_path, monkeypatch):
    no_accelerator(monkeypatch)
    config = REPO / 'tests' / 'data' / 'configs' / 'mask-rcnn_rmt-tiny_fpn_test.py'
    work_dir = tmp_path / 'work'
    monkeypatch.setattr(sys, 'argv', ['train.py', str(config), '--work-dir', str(work_dir),
                                      '--cfg-options', *AMP_OPTIONS])
    line = exit_line(lambda argv: import_tool('tools/train.py').main(), [])
    assert line == ("error: optim_wrapper.type=AmpOptimWrapper trains on a CUDA, NPU, MLU or MUSA device only "
                    "(mmengine's float16 with loss scaling), and this machine has none: on the CPU train with --amp "
                    '(bf16 autocast, where the CPU has native bf16) or with optim_wrapper.type=OptimWrapper')
    assert list(tmp_path.iterdir()) == []


def test_other_wrappers_and_a_device_pass(monkeypatch):
    check_optim_wrapper_device = import_tool('tools/train.py').check_optim_wrapper_device
    check_optim_wrapper_device(sgd_config())
    check_optim_wrapper_device(Config(dict(optim_wrapper=dict(type='CPUAmpOptimWrapper'))))
    import mmengine.device
    monkeypatch.setattr(mmengine.device, 'is_cuda_available', lambda: True)
    check_optim_wrapper_device(Config(dict(optim_wrapper=dict(type='AmpOptimWrapper'))))
