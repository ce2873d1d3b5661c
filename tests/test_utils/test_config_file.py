"""read_config: every problem of a config file one line naming the file (for a syntax error or a circle of _base_
files, those mmengine was reading when it failed)."""
import pytest

from mmrmt.utils import PreflightError, read_config


def refusal(path) -> str:
    with pytest.raises(PreflightError) as error:
        read_config(str(path))
    return str(error.value)


def test_a_missing_file_and_a_folder(tmp_path):
    assert refusal(tmp_path / 'none.py') == f'config file not found: {tmp_path}/none.py'
    (tmp_path / 'a.py').write_text('x = 1\n')
    assert refusal(tmp_path) == f'config {tmp_path} is a folder, not a config file; name one of its files, e.g. ' \
                                f'{tmp_path}/a.py'


def test_a_syntax_error_is_named_in_the_base_that_holds_it(tmp_path):
    (tmp_path / 'broken.py').write_text('model = dict(\n')
    (tmp_path / 'middle.py').write_text("_base_ = ['./broken.py']\n")
    (tmp_path / 'child.py').write_text("_base_ = ['./middle.py']\n")
    expected = f"syntax error in config {tmp_path}/broken.py, line 1: '(' was never closed"
    assert refusal(tmp_path / 'child.py') == expected


def test_a_circle_of_bases_is_named(tmp_path):
    (tmp_path / 'child.py').write_text("_base_ = ['./middle.py']\n")
    (tmp_path / 'middle.py').write_text("_base_ = ['./child.py', './broken.py']\n")
    (tmp_path / 'broken.py').write_text('model = dict(\n')  # the circle is named, not this
    chain = f'{tmp_path}/child.py -> {tmp_path}/middle.py -> {tmp_path}/child.py'
    assert refusal(tmp_path / 'child.py') == (f'config {tmp_path}/child.py: its _base_ files are circular ({chain}); '
                                              f'remove the _base_ entry of {tmp_path}/middle.py that names '
                                              f'{tmp_path}/child.py')


def test_a_config_that_is_its_own_base(tmp_path):
    (tmp_path / 'self.py').write_text("_base_ = ['./self.py']\nx = 1\n")
    path = tmp_path / 'self.py'
    assert refusal(path) == (f'config {path}: its _base_ files are circular ({path} -> {path}); remove the _base_ '
                             f'entry of {path} that names {path}')


def test_a_config_that_raises_is_one_line(tmp_path):
    (tmp_path / 'raises.py').write_text("x = {}['missing']\n")
    assert refusal(tmp_path / 'raises.py').startswith(f'config {tmp_path}/raises.py could not be loaded: ')


def test_a_good_config_with_bases_loads(tmp_path):
    (tmp_path / 'base.py').write_text('x = 1\ny = 2\n')
    (tmp_path / 'child.py').write_text("_base_ = ['./base.py']\ny = 3\n")
    cfg = read_config(str(tmp_path / 'child.py'))
    assert (cfg.x, cfg.y) == (1, 3)
