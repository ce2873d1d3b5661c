"""read_saved_config: the config text of an mmengine checkpoint read as data, never run."""
import pytest
from mmengine.config import Config

from mmrmt.checkpoint import make_resumed_config_inert, read_saved_config

TEST_CONFIGS = ['tests/data/configs/mask-rcnn_rmt-tiny_fpn_test.py', 'tests/data/configs/upernet_rmt-tiny_test.py',
                'configs/rmt/cascade-mask-rcnn_rmt-t_fpn_ms-3x_coco.py']


@pytest.mark.parametrize('path', TEST_CONFIGS)
def test_a_saved_config_reads_as_the_config_it_was_written_from(path):
    cfg = Config.fromfile(path)
    assert read_saved_config(cfg.pretty_text) == cfg.to_dict()


def test_literals():
    text = ("a = dict(b=[1, -2.5, (3, )], c={'d e': None}, f=True)\n"
            "g = {1, 2}\nh = +4\ni = 'x'\n")
    assert read_saved_config(text) == dict(a=dict(b=[1, -2.5, (3, )], c={'d e': None}, f=True),
                                           g={1, 2}, h=4, i='x')


@pytest.mark.parametrize('text,found', [
    ("_x = __import__('os').system('touch PWNED')", "line 1: the operator '.' is not part of a literal"),
    ('import os', 'line 1: a Import statement'),
    ("model = dict(type=open('/etc/passwd').read())", "line 1: the operator '.' is not part of a literal"),
    ("model = dict(type=open('/etc/passwd'))", "line 1: \"open('/etc/passwd')\" is not a literal"),
    ('a = 1\nb = a', "line 2: 'a' is not a literal"),
    ('a = dict(**{})', "line 1: the operator '**' is not part of a literal"),
    ('a = dict({}, b=1, *c)', "line 1: the operator '*' is not part of a literal"),
    ('a = dict([(1, 2)])', "line 1: 'dict([(1, 2)])' is not a literal"),
    ('a = [x for x in ()]', "line 1: '[x for x in ()]' is not a literal"),
    ('a = lambda: 0', "line 1: 'lambda: 0' is not a literal"),
    ("a = f'{1}'", 'line 1: "f\'{1}\'" is not a literal'),
    ('a = -b', 'line 1: the sign - is not before a number'),
    ('a = b = 1', 'line 1: a Assign statement, not name = value'),
    ('a.b = 1', "line 1: the operator '.' is not part of a literal"),
    ('a = (b, c)\nd = 1', "line 1: 'b' is not a literal"),
    ('print(1)', 'line 1: a Expr statement, not name = value'),
])
def test_anything_but_plain_data_is_refused(text, found):
    with pytest.raises(ValueError) as error:
        read_saved_config(text, 'run.pth (meta.cfg)')
    assert str(error.value).startswith('the config saved in run.pth (meta.cfg) is not plain data, so it was '
                                       f'not read (nor run): {found}')


LONG_OR_DEEP = {
    'unary minus signs': 'a = ' + '-' * 100_000 + '1',
    'an attribute chain': 'a = x' + '.b' * 100_000,
    'a sum': 'a = ' + '+'.join(['1'] * 300_000),
    'nested lists': 'a = ' + '[' * 100_000 + ']' * 100_000,
}


@pytest.mark.parametrize('text,found', [
    (LONG_OR_DEEP['unary minus signs'], 'line 1: the sign - is not before a number'),
    (LONG_OR_DEEP['an attribute chain'], "line 1: the operator '.' is not part of a literal"),
    (LONG_OR_DEEP['a sum'], "line 1: the operator '+' is not part of a literal"),
    (LONG_OR_DEEP['nested lists'], 'line 1: brackets nested more than 50 deep'),
    ('a = 1 - 2', "line 1: the operator '-' is not part of a literal"),
    ('a = [' + '1, ' * 400_000 + ']', 'it is 1,200,006 characters long (at most 1,000,000 are read)'),
    ('a = {[1]: 2}', 'line 1: a dict key or set element must be hashable ('),
    ('a = {{1}}', 'line 1: a dict key or set element must be hashable ('),
    ('a = {dict(b=1): 2}', 'line 1: a dict key or set element must be hashable ('),
    ('a = 1e999', 'line 1: a number too large to be finite (it reads as inf)'),
    ('a = [-1e999j]', 'line 1: a number too large to be finite (it reads as infj)'),
    ('a = 0x' + 'f' * 5000, 'line 1: a number of 5,002 characters (at most 50 are read)'),
    ('a = ' + '9' * 5000, 'line 1: a number of 5,000 characters (at most 50 are read)'),
    ("work_dir = '{{ fileDirname }}'", "line 1: the string holds the template '{{ fileDirname }}', which "
     'mmengine would substitute'),
    ("a = dict(b=['{{_base_.model}}'])", "line 1: the string holds the template '{{_base_.model}}'"),
])
def test_text_too_long_deep_or_wide_is_refused_before_parsing(text, found):
    """Refused with one line, never a MemoryError, RecursionError, TypeError or an int-string limit."""
    with pytest.raises(ValueError) as error:
        read_saved_config(text, 'run.pth (meta.cfg)')
    message = str(error.value)
    assert message.startswith('the config saved in run.pth (meta.cfg) is not plain data, so it was '
                              f'not read (nor run): {found}')
    assert message.endswith('mmengine writes only literals there: use a checkpoint from a source you trust')
    assert '\n' not in message


def test_text_that_is_not_python():
    with pytest.raises(ValueError, match=r'^the config saved in run.pth \(meta.cfg\) is not readable: line 2: '):
        read_saved_config('a = 1\nb = (', 'run.pth (meta.cfg)')


@pytest.mark.parametrize('text,kept', [
    ('gpu_ids = [0, 1]\nmodel = dict(type="X")\n', 'gpu_ids = [0, 1]\n'),
    ('model = dict(type="X")\n', 'gpu_ids = None\n'),
    ("_x = __import__('os').system('touch PWNED')\ngpu_ids = [0]\n", None),
    ('gpu_ids = 1e999\n', None),  # left as `gpu_ids = inf`, the text would be a NameError when mmengine runs it
    ("gpu_ids = '{{ fileDirname }}'\n", None),
    (LONG_OR_DEEP['unary minus signs'], None),
])
def test_what_mmengine_resume_would_run_is_left_as_plain_data(text, kept):
    checkpoint = dict(meta=dict(config=text, iter=4), state_dict={})
    make_resumed_config_inert(checkpoint)
    assert checkpoint['meta'] == (dict(iter=4) if kept is None else dict(config=kept, iter=4))


def test_a_checkpoint_without_the_resumed_config_is_left_alone():
    checkpoint = dict(meta=dict(cfg='a = 1\n'), state_dict={})
    make_resumed_config_inert(checkpoint)
    assert checkpoint == dict(meta=dict(cfg='a = 1\n'), state_dict={})
