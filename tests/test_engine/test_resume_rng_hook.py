"""ResumeRNGHook: a run interrupted and resumed draws the same random numbers as an uninterrupted one, in
its data pipeline (numpy's and Python's generators) as in its model (torch's), with each of the ways the
installed mmengine's loops catch up with the data (upstream: loading the trained batches again; the onedl
fork: skipping them through the sampler, or its iterator, without loading) and with an epoch-based loop."""
import random
from pathlib import Path
from typing import Dict, Optional

import numpy as np
import pytest
import torch
from mmengine.model import BaseModel
from mmengine.registry import DefaultScope
from mmengine.runner import Runner
from torch.utils.data import Dataset

from mmrmt.checkpoint import load_weights_only
from mmrmt.engine import ResumeRNGHook, resume_rng_hook


class RandomPipelineDataset(Dataset):
    """Eight samples of two numbers that, like a random data transform, draw from numpy and ``random``."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> Dict[str, torch.Tensor]:
        noise = np.random.rand(2) + random.random()
        return dict(inputs=torch.tensor(noise, dtype=torch.float32) + index)


class RandomModel(BaseModel):
    """A linear layer (the same weights in every run) whose loss draws from torch's generator, as dropout
    or proposal sampling do."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)
        torch.nn.init.constant_(self.linear.weight, 0.5)
        torch.nn.init.zeros_(self.linear.bias)

    def forward(self, inputs: torch.Tensor, data_samples=None, mode: str = 'tensor'):
        out = self.linear(inputs) * torch.rand(inputs.shape[0], 1)
        return dict(loss=(out ** 2).mean()) if mode == 'loss' else out


@pytest.fixture(autouse=True)
def scope_of_this_test_only():
    """A Runner makes its scope the process's current one: mmengine's context restores the scopes."""
    with DefaultScope.overwrite_default_scope('mmengine'):
        yield


def train(work_dir: Path, by_epoch: bool, sampler: str, length: int, resume_from: Optional[str] = None) -> dict:
    """Train ``length`` iterations (epochs if ``by_epoch``), a checkpoint every 2; resume from
    ``resume_from`` if given; return the last checkpoint's weights."""
    unit = dict(by_epoch=True, max_epochs=length) if by_epoch else dict(by_epoch=False, max_iters=length)
    runner = Runner(
        model=RandomModel(), work_dir=str(work_dir),
        train_dataloader=dict(dataset=RandomPipelineDataset(), sampler=dict(type=sampler, shuffle=True),
                              batch_size=2, num_workers=0, collate_fn=dict(type='default_collate')),
        train_cfg=unit, optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.1)),
        default_hooks=dict(checkpoint=dict(type='CheckpointHook', interval=2, by_epoch=by_epoch)),
        custom_hooks=[ResumeRNGHook()], randomness=dict(seed=0, deterministic=True),
        load_from=resume_from, resume=resume_from is not None)
    runner.train()
    name = f'epoch_{length}.pth' if by_epoch else f'iter_{length}.pth'
    return load_weights_only(work_dir / name, map_location='cpu')['state_dict']


@pytest.mark.parametrize('by_epoch,sampler,length', [
    (False, 'InfiniteSampler', 6),  # the fork skips through the sampler
    (False, 'DefaultSampler', 6),  # the fork skips through the iterator; 6 iterations pass an epoch's end
    (True, 'DefaultSampler', 4),  # resumed at an epoch's start
], ids=['iterations-infinite-sampler', 'iterations-default-sampler', 'epochs'])
def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(by_epoch, sampler, length, tmp_path):
    straight = train(tmp_path / 'straight', by_epoch, sampler, length)
    train(tmp_path / 'interrupted', by_epoch, sampler, 2)
    name = 'epoch_2.pth' if by_epoch else 'iter_2.pth'
    continued = train(tmp_path / 'interrupted', by_epoch, sampler, length,
                      resume_from=str(tmp_path / 'interrupted' / name))
    assert straight.keys() == continued.keys()
    assert all(torch.equal(straight[key], continued[key]) for key in straight)


def test_without_torch_states_a_resumed_run_ends_elsewhere(tmp_path, monkeypatch):
    """The test above can fail: the model's draws change the weights."""
    straight = train(tmp_path / 'straight', False, 'InfiniteSampler', 4)
    train(tmp_path / 'interrupted', False, 'InfiniteSampler', 2)
    monkeypatch.setattr(resume_rng_hook, 'set_torch_rng_states', lambda state: None)
    continued = train(tmp_path / 'interrupted', False, 'InfiniteSampler', 4,
                      resume_from=str(tmp_path / 'interrupted' / 'iter_2.pth'))
    assert not all(torch.equal(straight[key], continued[key]) for key in straight)
