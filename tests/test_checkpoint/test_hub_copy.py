"""A checkpoint fetched from a URL into torch's hub cache and then refused leaves no copy there, whoever fetched
it (issue 49: a ``file://`` url of timm's pretrained cfg holding pickled code stayed in the cache, where a later
loader, timm's own unpickling one among them, would find it under the same name)."""
import shutil

import pytest
import timm
import torch

import mmrmt  # noqa: F401  (registers the timm models)
from mmrmt.checkpoint import CheckpointRefusedError, read_checkpoint
from helpers.code_in_checkpoint import save_pickle_payload


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """torch's hub dir, inside the test's folder; its checkpoint cache."""
    monkeypatch.setattr(torch.hub, '_hub_dir', str(tmp_path / 'hub'))
    return tmp_path / 'hub' / 'checkpoints'


def test_timm_url_refused_leaves_no_copy(tmp_path, hub):
    payload = save_pickle_payload(tmp_path / 'rest_lite.pth', tmp_path / 'ran')
    with pytest.raises(CheckpointRefusedError, match='rest_lite.pth holds Python objects besides weights'):
        timm.create_model('rest_lite', pretrained=True, pretrained_cfg_overlay=dict(url=payload.as_uri()))
    assert not (tmp_path / 'ran').exists()
    assert list(hub.iterdir()) == []  # timm made the folder; the copy is gone


def test_a_fetched_url_refused_leaves_no_copy_and_a_cached_one_stays(tmp_path, hub, monkeypatch):
    payload = save_pickle_payload(tmp_path / 'model.pth', tmp_path / 'ran')
    monkeypatch.setattr(torch.hub, 'download_url_to_file', lambda url, local, **kwargs: shutil.copy(payload, local))
    url = 'https://example.com/weights/model.pth'
    for _ in range(2):  # fetched each time: no copy stays to be found
        with pytest.raises(CheckpointRefusedError, match='model.pth holds Python objects besides weights'):
            read_checkpoint(url)
        assert list(hub.iterdir()) == []
    shutil.copy(payload, hub / 'model.pth')  # a copy someone else put there is theirs
    with pytest.raises(CheckpointRefusedError):
        read_checkpoint(url)
    assert [path.name for path in hub.iterdir()] == ['model.pth']
    assert not (tmp_path / 'ran').exists()
