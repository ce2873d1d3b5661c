"""The backbones on a CUDA device: the same contract as on the CPU, the fast
RMT path equal to the reference one, and float16 / bfloat16 autocast within
their rounding of float64 (tools/misc/gpu_check.sh runs these)."""
import pytest
import torch

from helpers.precision import (NEEDS_CUDA, TINY_BACKBONES, assert_autocast_accurate, assert_within_rounding, build_tiny,
                               run)

pytestmark = NEEDS_CUDA
IMAGE_SHAPE = (2, 3, 64, 96)


def image() -> torch.Tensor:
    return torch.randn(IMAGE_SHAPE, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize('name', sorted(TINY_BACKBONES))
def test_cuda_outputs_are_the_cpu_ones(name: str):
    """Same shapes and dtype, on the device; float32 on the device within float32's
    rounding of the float64 result, as the CPU's float32 is."""
    exact = run(build_tiny(name, dtype=torch.float64), image().double())
    on_cpu = run(build_tiny(name), image())
    model = build_tiny(name, 'cuda')
    outputs = model(image().cuda())
    assert [out.shape for out in outputs] == [out.shape for out in on_cpu.outputs]
    assert all(out.device.type == 'cuda' and out.dtype == torch.float32 for out in outputs)
    assert_within_rounding(to_cpu(run(model, image().cuda())), torch.float32, on_cpu, exact)


def test_cuda_fast_path_equals_reference_path():
    """Both paths on the device within float32's rounding of one float64 result."""
    exact = run(build_tiny('rmt-fast', dtype=torch.float64), image().double())
    on_cpu = run(build_tiny('rmt-fast'), image())
    for name in ('rmt-fast', 'rmt-reference'):
        on_device = to_cpu(run(build_tiny(name, 'cuda'), image().cuda()))
        assert_within_rounding(on_device, torch.float32, on_cpu, exact)


def to_cpu(result):
    return result._replace(outputs=[out.cpu() for out in result.outputs], input_grad=result.input_grad.cpu(),
                           grads={name: grad.cpu() for name, grad in result.grads.items()})


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16], ids=['fp16', 'bf16'])
@pytest.mark.parametrize('name', sorted(TINY_BACKBONES))
def test_cuda_autocast_matches_float64(name: str, dtype: torch.dtype):
    if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        pytest.skip('this GPU has no bfloat16')
    assert_autocast_accurate(name, image().cuda(), dtype)
