"""mmrmt.utils.output_file: destinations checked first, replaced atomically."""
import os

import pytest

from mmrmt.utils import PreflightError
from mmrmt.utils.output_file import atomic_output, check_output_file


def test_check_output_file(tmp_path):
    source, output = tmp_path / 'in.pth', tmp_path / 'sub' / 'out.png'
    source.write_bytes(b'x')
    check_output_file(str(output), force=False, sources=[str(source)])  # a folder still to be made is fine
    with pytest.raises(PreflightError, match='exists; pass --force'):
        check_output_file(str(source), force=False)
    check_output_file(str(source), force=True)
    with pytest.raises(PreflightError, match='also an input'):
        check_output_file(str(source), force=True, sources=[str(source)])
    with pytest.raises(PreflightError, match='is a folder'):
        check_output_file(str(tmp_path), force=True)


def test_check_output_file_in_a_folder_it_cannot_write(tmp_path, monkeypatch):
    monkeypatch.setattr(os, 'access', lambda path, mode: str(path) != str(tmp_path))
    with pytest.raises(PreflightError, match=f'cannot write into {tmp_path} '):
        check_output_file(str(tmp_path / 'new' / 'out.png'), force=False)


def test_atomic_output_replaces_only_on_success(tmp_path):
    target = tmp_path / 'out.txt'
    target.write_text('old')
    with pytest.raises(RuntimeError):
        with atomic_output(str(target)) as tmp:
            open(tmp, 'w').write('half')
            raise RuntimeError('failed check')
    assert target.read_text() == 'old' and os.listdir(tmp_path) == ['out.txt']
    with atomic_output(str(target)) as tmp:
        open(tmp, 'w').write('new')
    assert target.read_text() == 'new' and os.listdir(tmp_path) == ['out.txt']
