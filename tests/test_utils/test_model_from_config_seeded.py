"""build_seeded_model: the initialisation a training run starts from, drawn from one seed whatever the caller's
random state, which it leaves as it was (so that two exports of a config hold the same weights: moved from
tests/tools/test_pytorch2onnx.py)."""
import torch

from mmrmt.utils import build_seeded_model, read_config
from helpers.tiny_configs import DET_CONFIG


def test_two_builds_hold_the_same_weights_and_leave_the_random_state():
    cfg = read_config(str(DET_CONFIG))
    cfg.model.backbone.pop('init_cfg', None)
    torch.manual_seed(1)
    state = torch.get_rng_state()
    first = build_seeded_model(cfg.copy()).state_dict()
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(2)
    second = build_seeded_model(cfg.copy()).state_dict()
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)
