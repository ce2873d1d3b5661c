"""mmrmt.utils.output_file: destinations checked before a tool runs."""
import os

import pytest

from mmrmt.utils import PreflightError
from mmrmt.utils.output_file import check_output_file


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
