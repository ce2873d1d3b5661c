"""Carry the random generators of the training process across an interrupted and resumed run."""
import random
from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import torch
from mmengine.dist import get_world_size
from mmengine.hooks import Hook
from mmengine.registry import HOOKS

CHECKPOINT_KEY = 'torch_rng_state'


def rng_states() -> Dict[str, object]:
    """The states of torch's CPU (and CUDA) generators, numpy's global one and Python's ``random``, in
    types that torch's weights-only unpickler reads (tensors, lists, numbers, strings)."""
    kind, key, position, has_gauss, gauss = np.random.get_state()
    state: Dict[str, object] = dict(cpu=torch.get_rng_state(), numpy=[kind, key.tolist(), position, has_gauss, gauss],
                                    random=random.getstate())
    if torch.cuda.is_available():
        state['cuda'] = torch.cuda.get_rng_state_all()
    return state


def set_data_rng_states(state: Dict[str, Any]) -> None:
    """Set numpy's and Python's generators (what a data pipeline draws from) to ``state``'s, where it has
    them (a checkpoint written before they were saved has torch's only)."""
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
    """An iteration-based loop's ``dataloader_iterator`` while a resumed run catches up with the data:
    it sets the generators to a checkpoint's states when the first batch not yet trained is fetched.

    The loops catch up in two ways: upstream mmengine fetches (loads) the
    trained batches again, the onedl fork's ``skip_iter`` moves the sampler
    past them without loading them; with ``fast_forward_on_resume`` it does
    neither. Numpy's and Python's generators are set just before the first
    new batch is loaded (its data pipeline draws from them as the
    uninterrupted run's did), torch's just after (the model's draws: the fork
    makes the torch DataLoader's iterator only then, which draws a seed from
    torch's generator that the uninterrupted run drew before the checkpoint).
    Then the loop gets its own iterator back.

    Args:
        loop: The iteration-based train loop (its ``dataloader_iterator`` is this object meanwhile).
        state (dict): The checkpoint's states (see :func:`rng_states`).
        trained (int): Batches trained before the checkpoint, which the loop catches up with.
    """

    def __init__(self, loop, state: Dict[str, Any], trained: int) -> None:
        self._loop, self._state, self._iterator = loop, state, loop.dataloader_iterator
        # batches the loop fetches again before its first new one (the fork's fast forward fetches none)
        self._to_refetch = 0 if getattr(loop, 'fast_forward_on_resume', False) else trained

    def __iter__(self) -> Iterator:
        return self

    def skip_iter(self, num_iters: int) -> None:
        """The fork's catching up without loading: the next batch fetched is a new one."""
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


@HOOKS.register_module()
class ResumeRNGHook(Hook):
    """Save the training process's random generator states in every checkpoint
    and restore them when training resumes from it: torch's CPU and CUDA
    generators (the model's randomness: proposal sampling, dropout, drop
    path), numpy's global generator and Python's ``random`` (the data
    pipeline's random transforms, e.g. ``RandomFlip``).

    mmengine's resume restores weights, optimizer, schedulers and message hub
    and catches the dataloader up with the checkpoint's iteration, but the
    generators restart from the seed. With this hook a resumed run draws the
    same random numbers as an uninterrupted one, so in deterministic mode it
    reaches the same weights, on upstream mmengine (which loads the trained
    batches again) as on the onedl fork (which skips them without loading,
    so that nothing replays their draws). An iteration-based loop gets the
    states when it fetches its first new batch (see
    :class:`RestoreAtFirstNewBatch`), an epoch-based one before training
    (it resumes at an epoch's start). Dataloader workers draw from their own
    generators, which mmengine seeds as each starts: on the fork, which does
    not load the trained batches through them, an exact resume of a pipeline
    with random transforms needs ``num_workers=0``. Only rank 0's states are
    saved, so a distributed run restores none (each process keeps its own
    seeded stream).

    Registered in mmengine's ``HOOKS`` when :mod:`mmrmt.engine` is imported.
    :class:`~mmrmt.engine.OwnWorkDirRunner`, the runner of mmrmt's configs,
    registers one itself unless the config's ``custom_hooks`` name it, so a
    user config that sets its own ``custom_hooks`` keeps it; a config run by
    another runner gets it from ``custom_hooks=[dict(type='ResumeRNGHook')]``
    (``configs/_base_/mmrmt_runtime.py``).
    """

    priority = 'VERY_LOW'

    def __init__(self) -> None:
        self._pending: Optional[Dict[str, object]] = None

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        checkpoint[CHECKPOINT_KEY] = rng_states()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        state = checkpoint.get(CHECKPOINT_KEY)
        self._pending = dict(state, iter=checkpoint['meta'].get('iter')) if state else None

    def before_train(self, runner) -> None:
        """Restore the states if this run resumed (not merely loaded weights): now, or as the
        iteration-based loop fetches its first new batch."""
        state, self._pending = self._pending, None
        if state is None or not runner.iter or runner.iter != state['iter'] or get_world_size() > 1:
            return
        loop = runner.train_loop
        if hasattr(loop, 'dataloader_iterator'):
            loop.dataloader_iterator = RestoreAtFirstNewBatch(loop, state, runner.iter)
        else:
            set_data_rng_states(state)
            set_torch_rng_states(state)
