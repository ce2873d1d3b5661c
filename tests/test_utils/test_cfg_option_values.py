"""``--cfg-options`` values with ``dict(...)``: parsed by mmrmt's reader, never evaluated."""
import pytest

from mmrmt.utils import PreflightError
from mmrmt.utils.cfg_options import parse_cfg_options


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
])
def test_dict_values_become_data(pair, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_cfg_options([pair]) == {'a': expected}
    assert list(tmp_path.iterdir()) == []  # nothing ran


@pytest.mark.parametrize('pair,expected', [
    ('a=[1,2]', [1, 2]), ('a=(1,x)', (1, 'x')), ('a=1,2', [1, 2]), ('a=none', 'none'), ('a=None', None),
])
def test_values_without_dict_read_as_mmengine_reads_them(pair, expected):
    assert parse_cfg_options([pair]) == {'a': expected}


@pytest.mark.parametrize('pair,entry', [('a=dict(1)', '1'), ('a=dict(a=1, 2b=3)', '2b=3'), ('a=[dict(=1)]', '=1')])
def test_a_dict_entry_without_a_name_is_one_line(pair, entry):
    with pytest.raises(PreflightError) as error:
        parse_cfg_options([pair])
    assert str(error.value) == f'--cfg-options {pair}: the entries of dict(...) are NAME=VALUE, got {entry!r}'
