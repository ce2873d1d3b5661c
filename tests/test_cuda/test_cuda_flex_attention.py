"""RMT's FlexAttention form on a CUDA device: forward and backward through FlexAttention's Triton kernels,
eager (the kernel compiled on its own) and compiled, equal to the reference; bf16 autocast within its
rounding of float64."""
import pytest
import torch

from mmrmt.models import RMT
from mmrmt.models.backbones.rmt import flex_attention
from helpers import precision
from helpers.precision import NEEDS_CUDA, assert_autocast_accurate, assert_within_rounding, run
from helpers.rounding import assert_within_low_precision

pytestmark = NEEDS_CUDA
#: Heads of 16 and 32 channels (Triton's kernels need 16), both stage kinds, non-square odd grids.
ARCH = dict(embed_dims=[32, 64, 64, 64], depths=[1, 1, 1, 1], num_heads=[2, 2, 4, 2], mlp_ratios=[2, 2, 2, 2],
            init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6], decomposed=[True, False, True, False],
            layer_scales=[False, False, True, True], layer_scale_init=0.5)
IMAGE_SHAPE = (2, 3, 45, 71)  # grids 12x18, 6x9, 3x5, 2x3


@pytest.fixture
def attended(monkeypatch) -> list:
    """How many times the forward attends through FlexAttention."""
    calls = []
    attend = flex_attention.attend

    def spy(*args):
        calls.append(1)
        return attend(*args)
    monkeypatch.setattr(flex_attention, 'attend', spy)
    return calls


def build(impl: str, device: str = 'cuda', dtype: torch.dtype = torch.float32) -> RMT:
    torch.manual_seed(0)
    model = RMT(ARCH, drop_path_rate=0., impl=impl)
    model.init_weights()
    return model.to(device, dtype).train()


def image() -> torch.Tensor:
    return torch.randn(IMAGE_SHAPE, generator=torch.Generator().manual_seed(0))


def to_cpu(result):
    return result._replace(outputs=[out.cpu() for out in result.outputs], input_grad=result.input_grad.cpu(),
                           grads={name: grad.cpu() for name, grad in result.grads.items()})


@pytest.mark.parametrize('compiled', [False, True], ids=['eager', 'compiled'])
def test_cuda_flex_equals_reference_outputs_and_gradients(compiled, attended):
    """Outputs, input and parameter gradients within float32's rounding of the reference's float64 run."""
    exact = run(build('reference', 'cpu', torch.float64), image().double())
    full = run(build('reference', 'cpu'), image())
    model = build('flex')
    torch._dynamo.reset()
    ours = run(torch.compile(model) if compiled else model, image().cuda())
    assert_within_rounding(to_cpu(ours), torch.float32, full, exact)
    assert len(attended) == 6  # two passes in each decomposed stage, one in each full one


def test_cuda_flex_inference_equals_reference(attended):
    """Without autograd: within float32's rounding of the reference's float64 outputs."""
    with torch.no_grad():
        ours = [out.cpu() for out in build('flex').eval()(image().cuda())]
        full = build('reference', 'cpu').eval()(image())
        exact = build('reference', 'cpu', torch.float64).eval()(image().double())
    assert_within_low_precision(ours, full, exact, torch.float32, [1] * len(exact))
    assert len(attended) == 6


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16], ids=['fp16', 'bf16'])
def test_cuda_flex_autocast_matches_float64(dtype, monkeypatch):
    if dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        pytest.skip('this GPU has no bfloat16')
    monkeypatch.setitem(precision.TINY_BACKBONES, 'rmt-flex', lambda: RMT(ARCH, drop_path_rate=0., impl='flex'))
    assert_autocast_accurate('rmt-flex', image().cuda(), dtype)
