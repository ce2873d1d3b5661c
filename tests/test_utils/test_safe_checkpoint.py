"""allow_mmengine_checkpoints: weights-only loading of mmengine checkpoints,
still refusing anything else."""
import pickle

import numpy as np
import pytest
import torch
from mmengine.logging import HistoryBuffer, MessageHub

from mmrmt.utils import allow_mmengine_checkpoints


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


def test_weights_only_load_refuses_then_allows_mmengine_checkpoint(tmp_path):
    path = save(mmengine_like_checkpoint(), tmp_path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)
    with allow_mmengine_checkpoints():
        loaded = torch.load(path, weights_only=True)
    buffer = loaded['message_hub']['log_scalars']['train/loss']
    assert isinstance(buffer, HistoryBuffer)
    assert buffer.mean() == pytest.approx(1.4)
    assert buffer.statistics('current') == pytest.approx(1.3)
    assert loaded['message_hub']['runtime_info']['eta'] == 12.5


@pytest.mark.parametrize('payload', [
    Arbitrary(),
    SneakyGetattr(HistoryBuffer, 'update'),
    SneakyGetattr(np.ndarray, 'tofile'),
    SneakyGetattr(HistoryBuffer, '__init__'),
])
def test_other_objects_are_still_refused(payload, tmp_path):
    path = save(dict(state_dict={'w': torch.ones(1)}, extra=payload), tmp_path)
    with allow_mmengine_checkpoints(), pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)


def test_allowlist_is_scoped_to_the_context(tmp_path):
    # torch registers some of its own types lazily (on first import of a
    # submodule), so compare what this context adds, not the whole list.
    assert HistoryBuffer not in torch.serialization.get_safe_globals()
    with allow_mmengine_checkpoints():
        assert HistoryBuffer in torch.serialization.get_safe_globals()
    assert HistoryBuffer not in torch.serialization.get_safe_globals()
