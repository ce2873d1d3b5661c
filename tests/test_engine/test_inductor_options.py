"""A config's ``compile`` setting: its Inductor options are judged as torch.compile judges them, one line
for the first bad one; settings without options (True, False, None, a backend) pass untouched."""
import pytest
import torch

from mmrmt.engine.inductor_options import compile_setting_problem


@pytest.mark.parametrize('setting', [None, True, False, dict(backend='eager'),
                                     dict(options=dict(freezing=True, layout_optimization=False)),
                                     dict(options={'layout-optimization': False})])
def test_settings_torch_takes_pass(setting):
    assert compile_setting_problem(setting) is None


@pytest.mark.parametrize('options, message', [
    (dict(layout_optimisation=False), f"compile.options.layout_optimisation: torch {torch.__version__} Inductor "
                                      "has no option 'layout_optimisation'; did you mean layout_optimization?"),
    (dict(freezing='yes'), "compile.options.freezing: freezing takes a bool, got 'yes' (str)"),
])
def test_a_bad_option_is_one_line(options, message):
    assert compile_setting_problem(dict(options=options)) == message


@pytest.mark.parametrize('setting, message', [
    ('yes', "compile must be True, False or dict(<keyword arguments of torch.compile>), got 'yes' (str)"),
    (dict(mode='turbo'), 'compile: Unrecognized mode=turbo, should be one of: '),
    (dict(fulgraph=True), "compile: compile() got an unexpected keyword argument 'fulgraph'"),
    (dict(options=['freezing']), "compile.options must be a dict of Inductor options, e.g. dict(freezing=True), "
                                 "got ['freezing']"),
    (dict(mode='max-autotune', options=dict(freezing=True)), 'compile: Either mode or options can be specified'),
    (dict(backend='inductr'), "compile: Invalid backend: 'inductr', did you mean: 'inductor'?"),
])
def test_a_bad_setting_is_one_line(setting, message):
    problem = compile_setting_problem(setting)
    assert problem.startswith(message) and '\n' not in problem
