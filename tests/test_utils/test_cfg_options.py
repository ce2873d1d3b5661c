"""apply_cfg_options: every bad ``--cfg-options`` override is one line naming it and the fix, found
before anything is built; good ones are merged as mmengine would. (That a tool ends with such a line, exit
status 1 and nothing written, is tests/tools/test_bad_inputs_probe.py's, one row a tool.)"""
from pathlib import Path

import pytest

from mmrmt.utils import PreflightError, apply_cfg_options, build_cpu_model, read_config
from helpers.tiny_configs import DET_CONFIG, SEG_CONFIG
from helpers.tool_modules import import_tool


def refusal(option: str, config: Path = DET_CONFIG) -> str:
    with pytest.raises(PreflightError) as error:
        apply_cfg_options(read_config(str(config)), [option])
    assert '\n' not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize('option,expected', [
    ('model.backbone.nonexistent_arg=3',
     "--cfg-options model.backbone.nonexistent_arg: RMT (model.backbone) has no 'nonexistent_arg'; it has "),
    ('model.backbone.nonexistent=dict(a=1,b=2)', "--cfg-options model.backbone.nonexistent: RMT (model.backbone) has "
     "no 'nonexistent'"),
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
    ('train_pipeline.9.scale=3', "--cfg-options train_pipeline.9.scale: train_pipeline is a list of 4 entries; "
     "'9' is not one of its indices 0-3"),
    ('模型.x=1', "--cfg-options 模型.x: the config has no '模型'; it has "),  # no run would read it
    ('modle.backbone.arch=t', "--cfg-options modle.backbone.arch: the config has no 'modle'; the nearest is model"),
    ('trian_cfg.max_iters=3',
     "--cfg-options trian_cfg.max_iters: the config has no 'trian_cfg'; the nearest is train_cfg"),
    ('param_scheduler=[dict(type=LinearLR,', "--cfg-options param_scheduler=[dict(type=LinearLR,: the value does "
     "not parse at character 6 ('(' was never closed); quote a value with spaces as one argument"),
    ('train_pipeline.2.scale=1,2)', "--cfg-options train_pipeline.2.scale=1,2): the value does not parse at "
     "character 4 (unmatched ')'); quote a value with spaces as one argument"),  # mmengine's reader refuses it
    ('model.backbone.init_cfg=dict(x)', "the entries of dict(...) are NAME=VALUE, got 'x'"),
])
def test_a_bad_override_is_one_line(option, expected):
    message = refusal(option)
    assert message.startswith(expected) if expected.startswith('--cfg-options') else expected in message, message


def test_every_component_is_checked_against_its_own_class():
    assert refusal('model.decode_head.num_clases=3', SEG_CONFIG) == (
        "--cfg-options model.decode_head.num_clases: UPerHead (model.decode_head) has no 'num_clases'; the nearest "
        'is model.decode_head.num_classes')
    assert refusal('test_dataloader.batch_size=-1', SEG_CONFIG) == (
        '--cfg-options: test_dataloader.batch_size must be an int >= 1, got -1')


def test_an_arch_the_backbone_lacks_is_named_when_the_model_builds():
    cfg = apply_cfg_options(read_config(str(DET_CONFIG)), ['model.backbone.arch=zz'])
    with pytest.raises(PreflightError, match=rf"^the model of {DET_CONFIG} does not build: KeyError: \"RMT: unknown "
                                             "arch 'zz'"):
        build_cpu_model(cfg)


def test_a_setting_that_is_none_names_how_to_replace_it(tmp_path):
    config = tmp_path / 'no_init.py'
    config.write_text(f'_base_ = [{str(DET_CONFIG)!r}]\nmodel = dict(backbone=dict(init_cfg=None))\n')
    assert refusal('model.backbone.init_cfg.checkpoint=x.pth', config) == (
        '--cfg-options model.backbone.init_cfg.checkpoint: model.backbone.init_cfg is None in the config, not a '
        'dict, so it has no checkpoint; replace the whole setting: --cfg-options model.backbone.init_cfg._delete_=True '
        'model.backbone.init_cfg.type=... model.backbone.init_cfg.checkpoint=x.pth')
    fixed = ['model.backbone.init_cfg._delete_=True', 'model.backbone.init_cfg.type=Pretrained',
             'model.backbone.init_cfg.checkpoint=x.pth']
    cfg = apply_cfg_options(read_config(str(config)), fixed)
    # the way the message names works: the run now reaches the check of that file
    with pytest.raises(PreflightError, match='^model.backbone.init_cfg.checkpoint x.pth does not exist; give the path '
                                             'of a checkpoint file$'):
        import_tool('tools/train.py').check_pretrained_checkpoints(cfg.model)


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
