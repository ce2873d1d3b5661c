"""Under float16 autocast (on the CPU here; tests/test_cuda repeats this on a
GPU) every backbone path computes what it computes in float32, outputs and
gradients, within the rounding float16 brings (helpers.precision.tolerances)."""
import pytest
import torch

from helpers.precision import TINY_BACKBONES, assert_close_to_float32, build_tiny, run, tolerances


@pytest.mark.parametrize('name', [pytest.param(name, marks=pytest.mark.slow) if name == 'rmt-reference' else name
                                  for name in sorted(TINY_BACKBONES)])  # the reference is the slow path
def test_float16_autocast_matches_float32(name: str):
    model = build_tiny(name)
    image = torch.randn(2, 3, 64, 96, generator=torch.Generator().manual_seed(0))
    full = run(model, image)
    half = run(model, image, torch.float16)
    assert_close_to_float32(half, full, *tolerances(name, torch.float16))


def test_rmt_fast_and_reference_agree_under_float16_autocast():
    image = torch.randn(2, 3, 64, 96, generator=torch.Generator().manual_seed(0))
    fast, reference = (run(build_tiny(name), image, torch.float16) for name in ('rmt-fast', 'rmt-reference'))
    assert_close_to_float32(fast, reference, *tolerances('rmt-fast', torch.float16))
