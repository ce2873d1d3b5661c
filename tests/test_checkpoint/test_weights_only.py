"""allow_mmengine_checkpoints (run by ``import mmrmt``): weights-only loading
of mmengine checkpoints, still refusing anything else."""
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from mmengine.logging import HistoryBuffer, MessageHub

from mmrmt.checkpoint import allow_mmengine_checkpoints


def mmengine_like_checkpoint() -> dict:
    """What mmengine's Runner.save_checkpoint stores besides tensors."""
    hub = MessageHub.get_instance('safe_checkpoint_test')
    for step in range(3):
        hub.update_scalar('train/loss', np.float64(1.5 - step / 10))
        hub.update_scalar('train/acc', np.float32(80 + step))
        hub.update_scalar('train/count', np.int64(step))
    hub.update_info('eta', np.float64(12.5))
    return dict(meta=dict(iter=3, seed=0, dataset_meta=dict(classes=('a', 'b'))),
                state_dict={'w': torch.ones(2)},
                message_hub=hub.state_dict(),
                optimizer=torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))]).state_dict())


class Arbitrary:
    def __init__(self):
        self.payload = 1


class SneakyGetattr:
    """Unpickles as ``getattr(owner, name)``, the way bound functions pickle."""

    def __init__(self, owner, name):
        self.owner, self.name = owner, name

    def __reduce__(self):
        return getattr, (self.owner, self.name)


def save(obj, tmp_path):
    path = tmp_path / 'checkpoint.pth'
    torch.save(obj, path)
    return path


def load_in_fresh_process(path, preamble: str) -> subprocess.CompletedProcess:
    code = f'{preamble}\nimport torch\ntorch.load({str(path)!r}, weights_only=True)'
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # a fresh process
def test_import_mmrmt_lets_weights_only_load_read_mmengine_checkpoints(tmp_path):
    path = save(mmengine_like_checkpoint(), tmp_path)
    refused = load_in_fresh_process(path, '')
    assert refused.returncode != 0 and 'HistoryBuffer was not an allowed global' in refused.stderr
    allowed = load_in_fresh_process(path, 'import mmrmt')
    assert allowed.returncode == 0, allowed.stderr[-2000:]


def test_mmengine_checkpoint_contents_survive_the_weights_only_load(tmp_path):
    allow_mmengine_checkpoints()  # already done by importing mmrmt; calling again is harmless
    loaded = torch.load(save(mmengine_like_checkpoint(), tmp_path), weights_only=True)
    buffer = loaded['message_hub']['log_scalars']['train/loss']
    assert isinstance(buffer, HistoryBuffer)
    # the values saved, bit for bit: the mean computed as before the save
    assert buffer.mean() == np.mean([1.5 - step / 10 for step in range(3)])
    assert buffer.statistics('current') == 1.5 - 2 / 10
    assert loaded['message_hub']['runtime_info']['eta'] == 12.5
    assert loaded['optimizer']['param_groups'][0]['lr'] == 1e-3  # AdamW's default, exactly


@pytest.mark.parametrize('payload', [
    Arbitrary(),
    SneakyGetattr(HistoryBuffer, 'update'),
    SneakyGetattr(np.ndarray, 'tofile'),
    SneakyGetattr(HistoryBuffer, '__init__'),
])
def test_other_objects_are_still_refused(payload, tmp_path):
    path = save(dict(state_dict={'w': torch.ones(1)}, extra=payload), tmp_path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)


def test_allowing_twice_adds_nothing():
    before = list(torch.serialization.get_safe_globals())
    allow_mmengine_checkpoints()
    assert torch.serialization.get_safe_globals() == before
