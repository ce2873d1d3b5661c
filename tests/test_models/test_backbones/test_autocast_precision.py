"""Under float16 and bfloat16 autocast (on the CPU here; tests/test_cuda repeats
this on a GPU) every backbone path computes its float64 outputs and gradients
within the rounding of the format: float32 and the autocast run are both
compared with float64, the float32 error giving how much this computation
amplifies rounding (helpers.precision.assert_within_rounding)."""
import pytest
import torch

from helpers.precision import (TINY_BACKBONES, assert_autocast_accurate, assert_within_rounding, build_tiny, run,
                               run_scaled)

IMAGE_SHAPE = (2, 3, 64, 96)


def image() -> torch.Tensor:
    return torch.randn(IMAGE_SHAPE, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16], ids=['fp16', 'bf16'])
@pytest.mark.parametrize('name', [pytest.param(name, marks=pytest.mark.slow) if name == 'rmt-reference' else name
                                  for name in sorted(TINY_BACKBONES)])  # the reference is the slow path
def test_autocast_matches_float64_within_rounding(name: str, dtype: torch.dtype):
    assert_autocast_accurate(name, image(), dtype)


def test_rmt_fast_and_reference_agree_under_float16_autocast():
    """Both paths within float16's rounding of one float64 result (the fast path's):
    so within twice that of each other."""
    exact = run(build_tiny('rmt-fast', dtype=torch.float64), image().double())
    fast = build_tiny('rmt-fast')
    full = run(fast, image())
    for model in (fast, build_tiny('rmt-reference')):
        assert_within_rounding(run_scaled(model, image(), torch.float16, full), torch.float16, full, exact)
