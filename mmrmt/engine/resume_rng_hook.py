"""Carry the random generators of the training process across an interrupted and resumed run."""
import random
from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import torch
from mmengine.dist import get_world_size
from mmengine.hooks import Hook
from mmengine.registry import HOOKS

from mmrmt.registry import HOOKS as MMRMT_HOOKS

CHECKPOINT_KEY = 'torch_rng_state'


def rng_states() -> Dict[str, object]:
    """The generators' states in types torch's weights-only unpickler reads (tensors, lists, numbers)."""
    kind, key, position, has_gauss, gauss = np.random.get_state()
    state: Dict[str, object] = dict(cpu=torch.get_rng_state(), numpy=[kind, key.tolist(), position, has_gauss, gauss],
                                    random=random.getstate())
    if torch.cuda.is_available():
        state['cuda'] = torch.cuda.get_rng_state_all()
    return state


def set_data_rng_states(state: Dict[str, Any]) -> None:
    """Set numpy's and Python's generators (a data pipeline's) to ``state``'s, where it has them."""
    if 'numpy' in state:
        kind, key, position, has_gauss, gauss = state['numpy']
        np.random.set_state((kind, np.array(key, dtype=np.uint32), position, has_gauss, gauss))
    if 'random' in state:
        version, internal, gauss_next = state['random']
        random.setstate((version, tuple(internal), gauss_next))


def set_torch_rng_states(state: Dict[str, Any]) -> None:
    """Set torch's CPU generator, and the CUDA ones where as many devices are there, to ``state``'s."""
    torch.set_rng_state(state['cpu'])
    cuda_states: List[torch.Tensor] = state.get('cuda', [])
    if torch.cuda.is_available() and len(cuda_states) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda_states)


class RestoreAtFirstNewBatch:
    """An iteration-based loop's ``dataloader_iterator`` while a resumed run catches up with the data (upstream
    mmengine fetches the trained batches again, the onedl fork skips them, or with ``fast_forward_on_resume`` neither):
    numpy's and Python's generators are set just before the first new batch is loaded, torch's just after (the fork
    makes the DataLoader's iterator only then, drawing a seed); then the loop gets its iterator back.

    Args:
        loop: The iteration-based train loop.
        state (dict): The checkpoint's states (see :func:`rng_states`).
        trained (int): Batches trained before the checkpoint.
    """

    def __init__(self, loop, state: Dict[str, Any], trained: int) -> None:
        self._loop, self._state, self._iterator = loop, state, loop.dataloader_iterator
        self._to_refetch = 0 if getattr(loop, 'fast_forward_on_resume', False) else trained

    def __iter__(self) -> Iterator:
        return self

    def skip_iter(self, num_iters: int) -> None:
        self._iterator.skip_iter(num_iters)
        self._to_refetch = 0

    def __next__(self) -> Any:
        if self._to_refetch > 0:
            self._to_refetch -= 1
            return next(self._iterator)
        self._loop.dataloader_iterator = self._iterator
        set_data_rng_states(self._state)
        batch = next(self._iterator)
        set_torch_rng_states(self._state)
        return batch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._iterator, name)


@MMRMT_HOOKS.register_module()
@HOOKS.register_module()
class ResumeRNGHook(Hook):
    """Save the random generators' states (torch's CPU and CUDA ones, numpy's, Python's ``random``) in every
    checkpoint and restore them when training resumes from it, so that a resumed run draws what an uninterrupted one
    draws (mmengine's resume restarts them from the seed), on upstream mmengine as on the onedl fork: an
    iteration-based loop at its first new batch (:class:`RestoreAtFirstNewBatch`), an epoch-based one before
    training. Dataloader workers draw from their own generators (on the fork an exact resume of random transforms
    needs ``num_workers=0``); a distributed run restores none (only rank 0's states are saved).
    """

    priority = 'VERY_LOW'
    _pending: Optional[Dict[str, object]] = None  # the states loaded, until training starts

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        checkpoint[CHECKPOINT_KEY] = rng_states()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        state = checkpoint.get(CHECKPOINT_KEY)
        self._pending = dict(state, iter=checkpoint['meta'].get('iter')) if state else None

    def before_train(self, runner) -> None:  # restore the states if this run resumed (not merely loaded weights)
        state, self._pending = self._pending, None
        if state is None or not runner.iter or runner.iter != state['iter'] or get_world_size() > 1:
            return
        loop = runner.train_loop
        if hasattr(loop, 'dataloader_iterator'):
            loop.dataloader_iterator = RestoreAtFirstNewBatch(loop, state, runner.iter)
        else:
            set_data_rng_states(state)
            set_torch_rng_states(state)
