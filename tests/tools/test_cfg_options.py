"""--cfg-options: every bad override is one line, before anything is built or written.

train.py's cases run in-process (tool_process.exit_message); each other tool
that takes --cfg-options is checked with one case of its own.
"""
import pytest

from mmrmt.utils import apply_cfg_options, read_config
from helpers.tool_modules import exit_line, import_tool
from tool_process import DET_CONFIG, REPO, SEG_CONFIG, exit_message


@pytest.mark.parametrize('option,expected', [
    ('model.backbone.nonexistent_arg=3',
     "--cfg-options model.backbone.nonexistent_arg: RMT (model.backbone) has no 'nonexistent_arg'; it has "),
    ('train_cfg.max_iter=2',
     "--cfg-options train_cfg.max_iter: IterBasedTrainLoop (train_cfg) has no 'max_iter'; the nearest is "
     'train_cfg.max_iters'),
    ('model.backbon.arch=t', "--cfg-options model.backbon.arch: MaskRCNN (model) has no 'backbon'; the nearest is "
     'model.backbone'),
    ('train_cfg.max_iters=abc', "--cfg-options: train_cfg.max_iters must be an int >= 1, got 'abc' (str)"),
    ('train_cfg.max_iters=2.5', '--cfg-options: train_cfg.max_iters must be an int >= 1, got 2.5 (float)'),
    ('train_dataloader.batch_size=0', '--cfg-options: train_dataloader.batch_size must be an int >= 1, got 0'),
    ('optim_wrapper.optimizer.lr=-0.01', '--cfg-options: optim_wrapper.optimizer.lr must be a finite number >= 0, '
     'got -0.01'),
    ('train_cfg.max_iters', "--cfg-options takes KEY=VALUE pairs, got 'train_cfg.max_iters'; e.g. "
     'train_cfg.max_iters=VALUE'),
    ('model.backbone.arch=zz', f"the model of {DET_CONFIG} does not build: KeyError: \"RMT: unknown arch 'zz'"),
    ('train_pipeline.9.scale=3', "--cfg-options train_pipeline.9.scale: train_pipeline is a list of 4 entries; "
     "'9' is not one of its indices 0-3"),
    ('模型.x=1', "--cfg-options 模型.x: the config has no '模型'; it has "),  # no run would read it
    ('modle.backbone.arch=t', "--cfg-options modle.backbone.arch: the config has no 'modle'; the nearest is model"),
    ('trian_cfg.max_iters=3',
     "--cfg-options trian_cfg.max_iters: the config has no 'trian_cfg'; the nearest is train_cfg"),
    ('param_scheduler=[dict(type=LinearLR,', "--cfg-options param_scheduler=[dict(type=LinearLR,: the '[' at "
     "character 1 of the value is never closed (a value with spaces must be one argument: quote it"),
    ('end=20)]', "--cfg-options end=20)]: the ')' at character 3 of the value closes no '('"),
    ('model.backbone.arch="t', '--cfg-options model.backbone.arch="t: the value has an unclosed "'),
])
def test_train_refuses_a_bad_override_before_the_run(option, expected, tmp_path, monkeypatch, capsys):
    message = exit_message('train.py', [DET_CONFIG, '--work-dir', tmp_path / 'work', '--cfg-options', option],
                           monkeypatch, capsys)
    assert message.startswith(f'error: {expected}')
    assert list(tmp_path.iterdir()) == []


def test_a_setting_that_is_none_names_how_to_replace_it(tmp_path, monkeypatch, capsys):
    config = tmp_path / 'no_init.py'
    config.write_text(f'_base_ = [{str(DET_CONFIG)!r}]\nmodel = dict(backbone=dict(init_cfg=None))\n')
    args = [config, '--work-dir', tmp_path / 'work', '--cfg-options']
    message = exit_message('train.py', [*args, 'model.backbone.init_cfg.checkpoint=x.pth'], monkeypatch, capsys)
    assert message == ('error: --cfg-options model.backbone.init_cfg.checkpoint: model.backbone.init_cfg is None '
                       'in the config, not a dict, so it has no checkpoint; replace the whole setting: '
                       '--cfg-options model.backbone.init_cfg._delete_=True model.backbone.init_cfg.type=... '
                       'model.backbone.init_cfg.checkpoint=x.pth')
    fixed = ['model.backbone.init_cfg._delete_=True', 'model.backbone.init_cfg.type=Pretrained',
             'model.backbone.init_cfg.checkpoint=x.pth']
    # the way the message names works: the run now reaches the check of that file
    assert exit_message('train.py', [*args, *fixed], monkeypatch, capsys) == (
        'error: model.backbone.init_cfg checkpoint not found: x.pth')
    assert sorted(path.name for path in tmp_path.iterdir()) == ['no_init.py']


@pytest.mark.parametrize('option', [
    'model.backbone.impl=reference',  # an argument of RMT the config leaves at its default
    'default_hooks.checkpoint.max_keep_ckpts=1',  # an argument of CheckpointHook
    'randomness.deterministic=True',  # a new setting of a plain dict, like none of its keys
    'train_pipeline.2.scale="(64,64)"',  # an entry of a list, by its index
    'model.roi_head.bbox_head.num_classes=3',
    'work_dir=elsewhere',
    'find_unused_parameters=True',  # a setting the runner reads that the config leaves out
    'model.roi_head.bbox_head.loss_cls.type="(x]"',  # brackets inside quotes are text
])
def test_valid_overrides_are_merged(option):
    cfg = apply_cfg_options(read_config(str(DET_CONFIG)), [option])
    key, value = option.split('=', 1)
    node = cfg
    for part in key.split('.'):
        node = node[int(part)] if isinstance(node, list) else node[part]
    assert str(node).replace(' ', '') == value.strip('"')


def test_test_tool_refuses_a_bad_override(tmp_path, monkeypatch, capsys):
    message = exit_message('test.py', [SEG_CONFIG, tmp_path / 'none.pth', '--work-dir', tmp_path / 'work',
                                       '--cfg-options', 'test_dataloader.batch_size=-1'], monkeypatch, capsys)
    assert message == 'error: --cfg-options: test_dataloader.batch_size must be an int >= 1, got -1'
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('tool,args', [
    ('tools/analysis_tools/get_flops.py', [SEG_CONFIG, '--shape', 64]),
    ('tools/analysis_tools/visualize_decay.py', [SEG_CONFIG, '--image', REPO / 'README.md', '--out', 'x.png']),
    ('tools/deployment/pytorch2onnx.py', [SEG_CONFIG, '--shape', 64, 64, '--out', 'x.onnx']),
])
def test_every_tool_checks_its_overrides_first(tool, args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    message = exit_line(import_tool(tool).main, [*args, '--cfg-options', 'model.decode_head.num_clases=3'])
    assert message == ("error: --cfg-options model.decode_head.num_clases: UPerHead (model.decode_head) has no "
                       "'num_clases'; the nearest is model.decode_head.num_classes")
    assert list(tmp_path.iterdir()) == []


def test_the_demo_checks_its_overrides_before_making_data(tmp_path, monkeypatch, capsys):
    message = exit_message('misc/demo.py', ['--work-dir', tmp_path / 'work', '--cfg-options', 'train_cfg.max_iters=0'],
                           monkeypatch, capsys)
    assert message == 'error: --cfg-options: train_cfg.max_iters must be an int >= 1, got 0'
    assert list(tmp_path.iterdir()) == []
