"""Config preparation shared by the tools: the RNG hook once, whichever config."""
from mmengine.config import Config

from mmrmt.utils import add_resume_rng_hook, load_run_config
from tool_process import DET_CONFIG


def test_our_configs_name_the_hook_and_the_tool_adds_no_second_one():
    cfg = load_run_config(str(DET_CONFIG))
    assert cfg.custom_hooks == [dict(type='ResumeRNGHook')]
    add_resume_rng_hook(cfg)
    assert cfg.custom_hooks == [dict(type='ResumeRNGHook')]


def test_a_user_config_gets_the_hook_beside_its_own():
    cfg = Config(dict(custom_hooks=[dict(type='EMAHook')]))
    add_resume_rng_hook(cfg)
    assert cfg.custom_hooks == [dict(type='EMAHook'), dict(type='ResumeRNGHook')]
    bare = Config(dict())
    add_resume_rng_hook(bare)
    assert bare.custom_hooks == [dict(type='ResumeRNGHook')]
