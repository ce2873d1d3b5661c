"""Our backbones compute what the upstream RMT and ResT code computes.

The fixtures (tests/data/*_float64.pt) hold small networks with every
parameter and BatchNorm statistic randomised, an odd-sized input, and the
upstream code's outputs, all in float64. Run in float64 too, our models
agree to float64's rounding (RELATIVE_TOLERANCE x the largest value, about
1e-11). A real discrepancy (an eps, a
GELU variant, an op order that changes the maths) shows at 1e-6 or above.
"""
from pathlib import Path
from typing import Sequence

import pytest
import torch
from torch import nn

from mmrmt.models import RMT, ResT
from helpers.checkpoints import pretrained, save
from helpers.rounding import two_implementations

#: Two float64 computations (theirs when the fixtures were made, ours now) of at
#: most 256 steps (a step per layer), each summing at most 512 terms (the
#: widest: an MLP's 256 hidden channels, a 3x3 conv over 32, the 24 tokens of a
#: decomposed row, the 30 of a full stage-3 map).
RELATIVE_TOLERANCE = two_implementations(torch.float64, 512, 256)


def assert_outputs_agree(ours: Sequence[torch.Tensor], upstream: Sequence[torch.Tensor]) -> None:
    """Same shapes, float64, and every value within RELATIVE_TOLERANCE x max|value| of the upstream one."""
    assert len(ours) == len(upstream) == 4
    for stage, (out, reference) in enumerate(zip(ours, upstream)):
        assert out.dtype == reference.dtype == torch.float64
        assert out.shape == reference.shape, stage
        error = (out - reference).abs().max().item()
        assert error <= RELATIVE_TOLERANCE * reference.abs().max().item(), (stage, error)


def rmt_arch(config: dict) -> dict:
    """Our arch dict for the upstream RMT constructor arguments."""
    return dict(embed_dims=config['embed_dims'], depths=config['depths'], num_heads=config['num_heads'],
                mlp_ratios=config['mlp_ratios'], init_values=config['init_values'],
                heads_ranges=config['heads_ranges'], decomposed=config['chunkwise_recurrents'],
                layer_scales=config['layerscales'], layer_scale_init=config['layer_init_values'])


def rest_arch(config: dict) -> dict:
    """Our arch dict for the upstream ResT constructor arguments."""
    assert config['qkv_bias'] and config['apply_transform']  # what ResT always builds
    return {key: config[key] for key in ResT.per_stage_args}


@pytest.mark.parametrize('impl', ['fast', 'reference'])
def test_rmt_matches_upstream_in_float64(data_dir: Path, impl: str):
    golden = torch.load(data_dir / 'rmt_tiny_seed0_float64.pt')
    model = RMT(rmt_arch(golden['config']), drop_path_rate=0., impl=impl).double().eval()
    model.load_state_dict(golden['state_dict'], strict=True)
    with torch.no_grad():
        outputs = model(golden['input'])
    assert_outputs_agree(outputs, golden['outputs'])


def test_rest_stage_features_match_upstream_in_float64_when_loaded_through_init_cfg(data_dir: Path, tmp_path):
    golden = torch.load(data_dir / 'rest_tiny_seed0_float64.pt')
    path = save({'model': golden['state_dict']}, tmp_path / 'golden.pth')
    model = ResT(rest_arch(golden['config']), init_cfg=pretrained(path)).double()
    model.init_weights()
    # The fixture holds each stage's last block output, before any output norm.
    model.extra_norms = nn.ModuleDict({key: nn.Identity() for key in model.extra_norms})
    model.norm = nn.Identity()
    model.eval()
    with torch.no_grad():
        outputs = model(golden['input'])
    assert_outputs_agree(outputs, golden['outputs_before_norm'])
