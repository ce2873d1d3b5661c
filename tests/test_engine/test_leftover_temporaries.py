"""A checkpoint a killed run did not finish writing (``.iter_N.pth.<hex>.tmp``, what replaced_atomically
writes first) is removed by the next run of the same work dir, once it holds the work dir's lock."""
import os

import pytest
from mmengine.registry import DefaultScope

from mmrmt.atomic_file import remove_leftover_temporaries, replaced_atomically
from mmrmt.engine import OwnWorkDirRunner
from helpers.tiny_model import TinyModel


def test_only_the_temporaries_of_replaced_atomically_are_removed(tmp_path):
    with pytest.raises(KeyboardInterrupt):  # what a kill leaves, as far as the folder is concerned
        with replaced_atomically(str(tmp_path / 'iter_2.pth')) as temporary:
            kept = temporary + '.kept'
            os.link(temporary, kept)
            raise KeyboardInterrupt
    os.rename(kept, temporary)
    for name in ('iter_1.pth', '.iter_1.pth.tmp', 'notes.0123456789ab.tmp', 'last_checkpoint'):
        (tmp_path / name).write_text('')
    assert remove_leftover_temporaries(str(tmp_path)) == [temporary]
    assert sorted(os.listdir(tmp_path)) == ['.iter_1.pth.tmp', 'iter_1.pth', 'last_checkpoint',
                                            'notes.0123456789ab.tmp']
    assert remove_leftover_temporaries(str(tmp_path / 'absent')) == []


def test_the_next_run_of_the_work_dir_removes_them(tmp_path):
    work_dir = tmp_path / 'work'
    work_dir.mkdir()
    leftover = work_dir / '.iter_4.pth.0123456789ab.tmp'
    leftover.write_bytes(b'half a checkpoint')
    with DefaultScope.overwrite_default_scope('mmengine'):
        OwnWorkDirRunner(model=TinyModel(), work_dir=str(work_dir))
    assert not leftover.exists()
