"""Config preparation shared by the tools: the RNG hook once, whichever config; the runner that
keeps to its work dir (and registers that hook itself) unless the config names another."""
from mmengine.config import Config
from mmengine.registry import RUNNERS
from torch import nn

from mmrmt.utils import build_runner, load_run_config
from helpers.tiny_configs import DET_CONFIG


def test_our_configs_name_the_hook_once():
    assert load_run_config(str(DET_CONFIG)).custom_hooks == [dict(type='mmrmt.ResumeRNGHook')]


def test_a_config_naming_no_runner_gets_the_own_work_dir_runner(monkeypatch):
    built = []
    monkeypatch.setattr(RUNNERS, 'build', lambda cfg: built.append(cfg.runner_type))
    build_runner(Config(dict()))
    build_runner(Config(dict(runner_type='Runner')))
    assert built == ['OwnWorkDirRunner', 'Runner']


def test_a_built_model_is_the_runners_with_nothing_left_to_load(monkeypatch):
    """tools/test.py's one build: the runner takes the model whose weights the tool loaded, builds none and loads
    no checkpoint; the config it logs keeps the checkpoint's name."""
    given = {}
    monkeypatch.setattr(RUNNERS, 'get', lambda name: lambda **arguments: given.update(arguments, name=name))
    model = nn.Linear(1, 1)
    cfg = Config(dict(model=dict(type='MaskRCNN'), work_dir='work', load_from='ck.pth', resume=True))
    build_runner(cfg, model)
    assert given['name'] == 'OwnWorkDirRunner' and given['model'] is model and given['work_dir'] == 'work'
    assert given['load_from'] is None and given['resume'] is False and given['cfg'].load_from == 'ck.pth'
