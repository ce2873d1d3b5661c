"""The backbones on a CUDA device: the same contract as on the CPU, the fast
RMT path equal to the reference one, and float16 / bfloat16 autocast within
their rounding of float32 (tools/misc/gpu_check.sh runs these)."""
import pytest
import torch

from helpers.precision import NEEDS_CUDA, TINY_BACKBONES, assert_close_to_float32, build_tiny, run, tolerances

pytestmark = NEEDS_CUDA
IMAGE_SHAPE = (2, 3, 64, 96)


@pytest.fixture(autouse=True)
def _full_float32():
    """float32 kernels without TF32 (cuDNN's convolutions use it by default)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.mark.parametrize('name', sorted(TINY_BACKBONES))
def test_cuda_outputs_are_the_cpu_ones(name: str):
    """Same shapes and dtype, on the device, equal to the CPU's outputs and gradients."""
    image = torch.randn(IMAGE_SHAPE, generator=torch.Generator().manual_seed(0))
    on_cpu = run(build_tiny(name), image)
    model = build_tiny(name, 'cuda')
    outputs = model(image.cuda())
    assert [out.shape for out in outputs] == [out.shape for out in on_cpu.outputs]
    assert all(out.device.type == 'cuda' and out.dtype == torch.float32 for out in outputs)
    assert_close_to_float32(run(model, image.cuda()), on_cpu, 1e-4, 1e-4)


def test_cuda_fast_path_equals_reference_path():
    image = torch.randn(IMAGE_SHAPE, generator=torch.Generator().manual_seed(0)).cuda()
    fast, reference = (run(build_tiny(name, 'cuda'), image) for name in ('rmt-fast', 'rmt-reference'))
    assert_close_to_float32(fast, reference, 1e-4, 1e-4)


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16], ids=['fp16', 'bf16'])
@pytest.mark.parametrize('name', sorted(TINY_BACKBONES))
def test_cuda_autocast_matches_float32(name: str, dtype: torch.dtype):
    if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        pytest.skip('this GPU has no bfloat16')
    model = build_tiny(name, 'cuda')
    image = torch.randn(IMAGE_SHAPE, generator=torch.Generator().manual_seed(0)).cuda()
    assert_close_to_float32(run(model, image, dtype), run(model, image), *tolerances(name, dtype))
