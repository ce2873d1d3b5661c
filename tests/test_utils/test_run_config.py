"""Config preparation shared by the tools: the RNG hook once, whichever config; the runner that
keeps to its work dir (and registers that hook itself) unless the config names another."""
from mmengine.config import Config
from mmengine.registry import RUNNERS

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
