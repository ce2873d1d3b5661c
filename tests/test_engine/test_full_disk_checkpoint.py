"""A disk that fills while OwnWorkDirRunner writes a checkpoint: one line naming the last complete checkpoint,
no part of the new one left, last_checkpoint still naming the complete one, the work dir given back (moved from
tests/tools/test_bad_inputs_probe.py: the runner's save_checkpoint, whichever launcher built it)."""
import errno
import os
from pathlib import Path

import pytest
import torch
from mmengine.fileio.backends import LocalBackend
from mmengine.model import BaseModel
from torch.utils.data import DataLoader

from mmrmt.engine.own_work_dir_runner import LOCK_FILE, OwnWorkDirRunner


class SquaredOutput(BaseModel):
    """One linear layer trained to output 0."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)

    def forward(self, inputs, data_samples=None, mode='loss'):
        return dict(loss=self.linear(inputs).pow(2).mean())


def test_a_full_disk_leaves_no_truncated_checkpoint(tmp_path, monkeypatch):
    put = LocalBackend.put

    def fill_up(backend, data, path):
        if 'iter_4' in str(path):
            Path(path).write_bytes(data[:len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        put(backend, data, path)

    monkeypatch.setattr(LocalBackend, 'put', fill_up)
    work_dir = tmp_path / 'work'
    runner = OwnWorkDirRunner(
        model=SquaredOutput(), work_dir=str(work_dir), train_cfg=dict(by_epoch=False, max_iters=4),
        train_dataloader=DataLoader([dict(inputs=torch.ones(2))] * 8, batch_size=2),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.1)),
        default_hooks=dict(checkpoint=dict(type='CheckpointHook', interval=2, by_epoch=False)))
    with pytest.raises(SystemExit) as exited:
        runner.train()
    assert exited.value.code == (f'error: cannot write checkpoint {work_dir}/iter_4.pth: No space left on device; '
                                 f'nothing of it was left, and the last complete one is {work_dir}/iter_2.pth '
                                 '(resume from it with --resume once there is room)')
    assert sorted(path.name for path in work_dir.glob('*.pth')) == ['iter_2.pth']
    assert not list(work_dir.glob('.*.tmp'))
    assert (work_dir / 'last_checkpoint').read_text() == str(work_dir / 'iter_2.pth')
    assert not (work_dir / LOCK_FILE).exists()
