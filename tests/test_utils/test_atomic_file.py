"""replaced_atomically: the destination is wholly replaced, or left as it was."""
import os

import pytest

from mmrmt.atomic_file import UnwritableError, replaced_atomically


def test_success_replaces_with_the_usual_permissions(tmp_path):
    destination = tmp_path / 'out.pth'
    destination.write_text('old')
    with replaced_atomically(str(destination)) as temporary:
        assert os.path.dirname(temporary) == str(tmp_path)
        with open(temporary, 'w') as file:
            file.write('new')
    assert destination.read_text() == 'new'
    umask = os.umask(0)
    os.umask(umask)
    assert destination.stat().st_mode & 0o777 == 0o666 & ~umask
    assert [path.name for path in tmp_path.iterdir()] == ['out.pth']


def test_failure_leaves_the_destination_and_no_temporary_file(tmp_path):
    destination = tmp_path / 'out.pth'
    destination.write_text('old')
    with pytest.raises(ValueError), replaced_atomically(str(destination)) as temporary:
        with open(temporary, 'w') as file:
            file.write('half')
        raise ValueError('the check failed')
    assert destination.read_text() == 'old'
    assert [path.name for path in tmp_path.iterdir()] == ['out.pth']


def test_without_overwrite_a_file_that_appeared_meanwhile_is_kept(tmp_path):
    destination = tmp_path / 'preds.pkl'
    with replaced_atomically(str(destination), overwrite=False) as temporary:
        with open(temporary, 'w') as file:
            file.write('first')
    assert destination.read_text() == 'first'
    with pytest.raises(FileExistsError), replaced_atomically(str(destination), overwrite=False) as temporary:
        with open(temporary, 'w') as file:
            file.write('second')
    assert destination.read_text() == 'first'
    assert [path.name for path in tmp_path.iterdir()] == ['preds.pkl']


def test_a_folder_that_takes_no_file_is_one_line(tmp_path):
    """What the tools' writable check cannot see (root under /proc) ends as run_main's one line, nothing written."""
    destination = tmp_path / 'missing' / 'out.pth'
    with pytest.raises(UnwritableError) as error, replaced_atomically(str(destination)):
        raise AssertionError('the block must not run')
    message = str(error.value)
    assert message.startswith(f'{destination} cannot be written: no new file can be made in {tmp_path / "missing"} (')
    assert message.endswith('; choose another place')
    assert [path.name for path in tmp_path.iterdir()] == []
