"""``--cfg-options`` values with ``dict(...)`` or brackets mmengine's reader refuses: Python's parser and the saved
configs' literal reader, never evaluated; what is not a literal is its text, as mmengine reads a word."""
import pytest

from mmrmt.utils import PreflightError
from mmrmt.utils.cfg_options import parse_pairs


@pytest.mark.parametrize('pair,expected', [
    ('a=dict(a=1,b=2)', {'a': 1, 'b': 2}),
    ('a=[dict(a=1), dict(a=2)]', [{'a': 1}, {'a': 2}]),
    ('a=[dict(type=LinearLR, start_factor=0.1, by_epoch=False, begin=0, end=2), dict(type=MultiStepLR, '
     'milestones=[1,2])]', [dict(type='LinearLR', start_factor=0.1, by_epoch=False, begin=0, end=2),
                            dict(type='MultiStepLR', milestones=[1, 2])]),
    ("a=(dict(x='s, t'),)", ({'x': 's, t'}, )),
    ('a=dict(a=(1,2),b=[3],c=None,d=true)', {'a': (1, 2), 'b': [3], 'c': None, 'd': True}),
    ('a=dict(inner=dict(deeper=dict(x=1.5)))', {'inner': {'deeper': {'x': 1.5}}}),
    ('a=[dict(a=1)],[dict(b=2)]', [[{'a': 1}], [{'b': 2}]]),
    ("a=dict(code=__import__('os').system('touch PWNED'))", {'code': "__import__('os').system('touch PWNED')"}),
    ('a=dict(img=data/x.jpg,k=-1,s={"b":2})', {'img': 'data/x.jpg', 'k': -1, 's': {'b': 2}}),
])
def test_dict_values_become_data(pair, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_pairs([pair], '--cfg-options') == {'a': expected}
    assert list(tmp_path.iterdir()) == []  # nothing ran


@pytest.mark.parametrize('pair,expected', [
    ('a=[1,2]', [1, 2]), ('a=(1,x)', (1, 'x')), ('a=1,2', [1, 2]), ('a=none', 'none'), ('a=None', None),
    ('a="[1, 2]"', [1, 2]), ('a=./x/y.pth', './x/y.pth'), ('a=true', True),
    ('a=[a', '[a'), ('a=x]', 'x]'), ('a="t', 't'),  # a bracket or a quote no comma follows: mmengine's reading
])
def test_values_without_dict_read_as_mmengine_reads_them(pair, expected):
    assert parse_pairs([pair], '--cfg-options') == {'a': expected}


@pytest.mark.parametrize('pair,expected', [
    ('a=f(a,b)', 'f(a,b)'),  # mmengine's reader recurses without end
    ('a="(x],y"', '(x],y'),  # mmengine's reader asserts that the brackets balance
])
def test_values_mmengine_cannot_read_are_read_by_python(pair, expected):
    assert parse_pairs([pair], '--cfg-options') == {'a': expected}


@pytest.mark.parametrize('pair,problem', [
    ('a=[1,2', "the value does not parse at character 1 ('[' was never closed); quote a value with spaces"),
    ('a=(64,', "the value does not parse at character 1 ('(' was never closed); quote a value with spaces"),
    ('a=dict(1)', "the entries of dict(...) are NAME=VALUE, got '1'"),
    ('a=dict(**x)', "the entries of dict(...) are NAME=VALUE, got 'dict(**x)'"),
    ('a=dict(a=1, 2b=3)', 'the value does not parse at character 11 ('),  # Python's reason, then the fix
    ('a=[dict(=1)]', 'the value does not parse at character 7 ('),
    ('a=dict(path=/a/b)', 'the value does not parse at character 11 ('),  # text is quoted
    ("a=dict(x='{{ y }}')", 'the value is not plain data (line 1: the string holds the template'),
])
def test_a_value_python_cannot_read_is_one_line(pair, problem):
    with pytest.raises(PreflightError) as error:
        parse_pairs([pair], '--cfg-options')
    message = str(error.value)
    assert message.startswith(f'--cfg-options {pair}: {problem}') and '\n' not in message, message
    assert 'NAME=VALUE' in message, message
