"""Carry torch's random generators across an interrupted and resumed run."""
from typing import Dict, List, Optional

import torch
from mmengine.dist import get_world_size
from mmengine.hooks import Hook
from mmengine.registry import HOOKS

CHECKPOINT_KEY = 'torch_rng_state'


@HOOKS.register_module()
class ResumeRNGHook(Hook):
    """Save torch's CPU and CUDA generator states in every checkpoint and
    restore them when training resumes from it.

    mmengine's resume restores weights, optimizer, schedulers and message hub
    and replays the dataloader up to the checkpoint's iteration, but the
    model's own randomness (proposal sampling, dropout, drop path) restarts
    from the seed. With this hook a resumed run draws the same random numbers
    as an uninterrupted one, so in deterministic mode it reaches the same
    weights. The data pipeline's numpy randomness is not touched: the replay
    reproduces it, in dataloader workers as in the main process. Only rank
    0's states are saved, so a distributed run restores none (each process
    keeps its own seeded stream).

    Registered in mmengine's ``HOOKS`` when :mod:`mmrmt.engine` is imported.
    :class:`~mmrmt.engine.OwnWorkDirRunner`, the runner of mmrmt's configs,
    registers one itself unless the config's ``custom_hooks`` name it, so a
    user config that sets its own ``custom_hooks`` keeps it; a config run by
    another runner gets it from ``custom_hooks=[dict(type='ResumeRNGHook')]``
    (``configs/_base_/mmrmt_runtime.py``; our tools add it when missing).
    """

    priority = 'VERY_LOW'

    def __init__(self) -> None:
        self._pending: Optional[Dict[str, object]] = None

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        state: Dict[str, object] = dict(cpu=torch.get_rng_state())
        if torch.cuda.is_available():
            state['cuda'] = torch.cuda.get_rng_state_all()
        checkpoint[CHECKPOINT_KEY] = state

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        state = checkpoint.get(CHECKPOINT_KEY)
        self._pending = dict(state, iter=checkpoint['meta'].get('iter')) if state else None

    def before_train(self, runner) -> None:
        """Restore the states if this run resumed (not merely loaded weights)."""
        state, self._pending = self._pending, None
        if state is None or not runner.iter or runner.iter != state['iter'] or get_world_size() > 1:
            return
        torch.set_rng_state(state['cpu'])
        cuda_states: List[torch.Tensor] = state.get('cuda', [])
        if torch.cuda.is_available() and len(cuda_states) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda_states)
