"""torch.compile (Inductor) of the backbones gives eager's outputs: RMT-T (its fast path, decomposed and
full MaSA) and ResT-Lite, float32, within the bound of two float32 computations of the network."""
import pytest
import torch

from mmrmt.models import RMT, ResT
from helpers.rounding import assert_close, two_implementations
from helpers.runtime_bounds import layer_count, longest_reduction

SIZE = 64  # stride 32: 2x2 tokens in the last stage, 16x16 in the first
BACKBONES = {'rmt-t': lambda: RMT('t', drop_path_rate=0.), 'rest-lite': lambda: ResT('lite', drop_path_rate=0.)}


@pytest.mark.slow
@pytest.mark.parametrize('name', sorted(BACKBONES))
def test_compiled_backbone_gives_eager_outputs(name):
    torch.manual_seed(0)
    model = BACKBONES[name]().eval()
    image = torch.randn(2, 3, SIZE, SIZE)
    torch._dynamo.reset()
    with torch.no_grad():
        eager = model(image)
        compiled = torch.compile(model)(image)
    # an attention sums over at most the first stage's tokens, a layer over its reduction
    terms = max(longest_reduction(model), (SIZE // 4) ** 2)
    tolerance = two_implementations(torch.float32, terms, layer_count(model))
    assert len(compiled) == len(eager) == 4
    for ours, theirs in zip(compiled, eager):
        assert ours.shape == theirs.shape
        assert_close(ours, theirs, tolerance)
