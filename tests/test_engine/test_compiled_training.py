"""mmengine's ``compile=True`` in a config (the Runner compiles ``train_step`` with torch.compile) trains an
RMT backbone to eager's losses and weights: two SGD steps of a tiny RMT (its fast training path, custom
autograd Functions included), within the bound of two float32 computations of forward and backward."""
import copy
from typing import Dict, List

import pytest
import torch
from mmengine.config import Config
from mmengine.dataset import BaseDataset
from mmengine.hooks import Hook
from mmengine.model import BaseModel
from mmengine.registry import DATASETS, HOOKS, MODELS
from mmengine.runner import Runner

from mmrmt.models import RMT
from helpers.backbones import RMT_TINY
from helpers.rounding import assert_close, two_implementations
from helpers.runtime_bounds import layer_count, longest_reduction

SIZE = 64


@MODELS.register_module(force=True)
class RMTFeatureEnergy(BaseModel):
    """A tiny RMT trained to shrink its features' mean square: a training step with no head to speak of."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = RMT(RMT_TINY, drop_path_rate=0.)

    def forward(self, inputs: torch.Tensor, data_samples=None, mode: str = 'loss') -> Dict[str, torch.Tensor]:
        return dict(loss=sum(feature.square().mean() for feature in self.backbone(inputs)))


@DATASETS.register_module(force=True)
class SeededImages(BaseDataset):
    """Four normal random images, the same each time."""

    def __init__(self) -> None:
        super().__init__(serialize_data=False, lazy_init=True)
        self.images = torch.randn(4, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))

    def full_init(self) -> None:
        self._fully_initialized = True

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> dict:
        return dict(inputs=self.images[index])


@HOOKS.register_module(force=True)
class LossRecorder(Hook):
    """Each iteration's loss, in ``losses``."""

    def __init__(self) -> None:
        self.losses: List[float] = []

    def after_train_iter(self, runner, batch_idx: int, data_batch=None, outputs=None) -> None:
        self.losses.append(outputs['loss'].item())


def train(work_dir, compile: bool):
    """Two iterations of batch 2; the losses and the final weights."""
    cfg = Config(dict(
        model=dict(type='RMTFeatureEnergy'), work_dir=str(work_dir), randomness=dict(seed=0),
        train_dataloader=dict(dataset=dict(type='SeededImages'), batch_size=2, num_workers=0,
                              sampler=dict(type='DefaultSampler', shuffle=False),
                              collate_fn=dict(type='default_collate')),
        train_cfg=dict(by_epoch=False, max_iters=2), optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.5)),
        default_hooks=dict(checkpoint=None, logger=None), custom_hooks=[dict(type='LossRecorder')],
        compile=compile))
    runner = Runner.from_cfg(cfg)
    start = copy.deepcopy(runner.model.state_dict())
    runner.train()
    recorder = next(hook for hook in runner.hooks if isinstance(hook, LossRecorder))
    return recorder.losses, start, runner.model.state_dict()


@pytest.mark.slow
def test_compiled_training_steps_give_eager_losses_and_weights(tmp_path):
    torch._dynamo.reset()
    eager_losses, eager_start, eager = train(tmp_path / 'eager', compile=False)
    compiled_losses, compiled_start, compiled = train(tmp_path / 'compiled', compile=True)
    assert all(torch.equal(eager_start[name], compiled_start[name]) for name in eager_start)  # one seed
    model = RMTFeatureEnergy()
    terms = max(longest_reduction(model), (SIZE // 4) ** 2)
    # forward and backward: twice the layers in series; the second step's losses see the first's updates
    tolerance = two_implementations(torch.float32, terms, 2 * layer_count(model))
    assert_close(torch.tensor(compiled_losses), torch.tensor(eager_losses), tolerance)
    updates = {name: (eager[name] - eager_start[name], compiled[name] - compiled_start[name]) for name in eager}
    scale = max(update.abs().max().item() for update, _ in updates.values())
    assert scale > 0
    for name, (eager_update, compiled_update) in updates.items():
        assert_close(compiled_update, eager_update, tolerance, scale=scale, msg=name)
