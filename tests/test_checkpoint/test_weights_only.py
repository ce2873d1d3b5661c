"""load_weights_only: weights-only loading of mmengine checkpoints, still refusing anything
else, with torch's own allow-list left as it is (``import mmrmt`` adds nothing to it)."""
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from mmengine.logging import HistoryBuffer, MessageHub

from mmrmt.checkpoint import load_weights_only
from mmrmt.checkpoint.weights_only import checkpoint_safe_globals


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


@pytest.mark.slow  # a fresh process
def test_import_mmrmt_leaves_torch_weights_only_load_as_it_is(tmp_path):
    path = save(mmengine_like_checkpoint(), tmp_path)
    code = f'import torch, mmrmt\ntorch.load({str(path)!r}, weights_only=True)'
    refused = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and 'HistoryBuffer was not an allowed global' in refused.stderr


@pytest.mark.slow  # a fresh process
def test_statistics_load_before_any_history_buffer_exists(tmp_path):
    """mmengine registers the default statistics (pickled as ``getattr(HistoryBuffer, 'mean')``) with the class
    only when a first HistoryBuffer is made: a process that loads a checkpoint before that loads them too."""
    hub = MessageHub.get_instance('fresh_process_test')
    hub.update_scalar('train/loss', np.float64(1.5))
    path = save(dict(message_hub=hub.state_dict()), tmp_path)
    code = ('from mmengine.logging import HistoryBuffer\nfrom mmrmt.checkpoint import load_weights_only\n'
            'assert not HistoryBuffer._statistics_methods\n'
            f"print(load_weights_only({str(path)!r})['message_hub']['log_scalars']['train/loss'].mean())")
    loaded = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr
    assert float(loaded.stdout) == 1.5


def test_mmengine_checkpoint_contents_survive_the_weights_only_load(tmp_path):
    loaded = load_weights_only(save(mmengine_like_checkpoint(), tmp_path))
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
        load_weights_only(path)


def test_a_load_leaves_torch_allow_list_as_it_was(tmp_path):
    before = set(map(repr, torch.serialization.get_safe_globals()))
    load_weights_only(save(mmengine_like_checkpoint(), tmp_path))
    assert set(map(repr, torch.serialization.get_safe_globals())) == before
    assert HistoryBuffer in checkpoint_safe_globals()
