"""The attention maps of RMT's MaSA (``RMT.attention_maps``, ``ManhattanSelfAttention2d.attention_maps``):
the decay prior and the attention each head applies at one query token."""
import pytest
import torch
from torch import nn

from mmrmt.models import RMT, ManhattanSelfAttention2d
from helpers.backbones import RMT_TINY
from helpers.rounding import assert_close, two_implementations

#: An input of RMT_TINY: its stage 1 (decomposed) is 13x17 tokens, stage 2 (full) 7x9.
IMAGE_SHAPE = (1, 3, 100, 132)


def random_rmt(impl: str) -> RMT:
    """RMT_TINY in eval mode with random weights (biases and norms too) and per-head decays."""
    torch.manual_seed(0)
    model = RMT(RMT_TINY, impl=impl).eval()
    for param in model.parameters():
        nn.init.normal_(param, std=0.3)
    for layer in model.layers:
        layer.Relpos.decay.uniform_(-1.5, -0.05)
    return model


def maps_of_the_previous_tool(backbone: RMT, images: torch.Tensor, stage: int, block: int, query: tuple):
    """What tools/analysis_tools/visualize_decay.py computed itself before the maps were the library's.

    The MaSA's input caught by a hook on its call (the reference MaSA takes
    the normed tokens, the fast one the tokens and its pre-norm), its
    ``attention_weights`` composed at the query, the query's column of the
    (hw, hw) log-decay table.
    """
    captured = []

    def hook(module: nn.Module, args: tuple) -> None:
        x, _, norm = (*args, None)[:3]
        captured.append(x if norm is None else norm(x))

    attention = backbone.layers[stage].blocks[block].retention
    handle = attention.register_forward_pre_hook(hook)
    with torch.no_grad():
        backbone(images)
    handle.remove()
    x, relpos = captured[0], backbone.layers[stage].Relpos
    height, width = x.shape[1:3]
    qy, qx = query
    with torch.no_grad():
        weights = attention.attention_weights(x, relpos)
        if attention.decomposed:
            applied = weights.columns[0, qx, :, qy][:, :, None] * weights.rows[0, :, :, qx].transpose(0, 1)
        else:
            applied = weights[0, :, qy * width + qx].view(-1, height, width)
        decay = relpos.decay_2d(height, width)[:, qy * width + qx].view(-1, height, width).exp()
    return relpos.decay.exp(), decay, applied


@pytest.mark.parametrize('impl', ['fast', 'reference'])
@pytest.mark.parametrize('stage, block, query', [(1, 1, (2, 5)), (2, 0, (6, 0))], ids=['decomposed', 'full'])
def test_rmt_maps_are_those_the_tool_computed_before_bit_for_bit(impl, stage, block, query):
    backbone = random_rmt(impl)
    images = torch.randn(IMAGE_SHAPE, generator=torch.Generator().manual_seed(1))
    gammas, decay, applied = maps_of_the_previous_tool(backbone, images, stage, block, query)
    with torch.no_grad():
        maps = backbone.attention_maps(images, stage, block, query)
    assert maps.query == query
    assert torch.equal(maps.gammas, gammas)
    assert torch.equal(maps.decay, decay)
    assert maps.attention.shape == (1, *applied.shape)
    assert torch.equal(maps.attention[0], applied)


@pytest.mark.parametrize('impl', ['fast', 'reference'])
@pytest.mark.parametrize('stage', [1, 2], ids=['decomposed', 'full'])
def test_rmt_map_is_what_the_block_applies_at_the_query(impl, stage):
    """Weighting v by the map gives the MaSA's output at the query (before the LCE and the output
    projection), as the block computes it in the backbone's forward."""
    backbone = random_rmt(impl)
    attention = backbone.layers[stage].blocks[0].retention
    merged = []
    attention.out_proj.register_forward_pre_hook(lambda module, args: merged.append(args[0]))
    images = torch.randn(IMAGE_SHAPE, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        backbone(images)
        maps = backbone.attention_maps(images, stage, 0, (3, 4))
        v = attention.v_proj(backbone.attention_input(images, stage, 0))
        applied = (merged[0] - attention.lepe(v))[0, 3, 4].view(attention.num_heads, -1)
        weighted = torch.einsum('nyx,yxnd->nd', maps.attention[0], v[0].view(*v.shape[1:3], attention.num_heads, -1))
    # the same float32 function in another order: q k^T, the softmax and (.) v (3 steps) over at most the
    # stage's 13 x 17 = 221 tokens (more than its channels)
    assert_close(weighted, applied, two_implementations(torch.float32, 221, 3))


def test_rmt_maps_of_a_batch_are_each_image_s_own():
    """Batched GEMMs round differently from single ones: the float32 maps of q k^T and the softmax
    (2 steps over stage 1's 13 x 17 = 221 tokens) computed in another order, within
    two_implementations of each other; the two images' maps differ by more."""
    backbone = random_rmt('fast')
    images = torch.randn(2, *IMAGE_SHAPE[1:], generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        batch = backbone.attention_maps(images, 1, 0)
        alone = [backbone.attention_maps(image[None], 1, 0) for image in images]
    assert batch.query == (6, 8)  # the centre of stage 1's 13x17 grid
    tolerance = two_implementations(torch.float32, 221, 2)
    for index, maps in enumerate(alone):
        assert_close(batch.attention[index], maps.attention[0], tolerance)
    assert not torch.allclose(alone[0].attention, alone[1].attention, atol=0, rtol=tolerance)  # two images


@pytest.mark.parametrize('impl', ['fast', 'reference'])
@pytest.mark.parametrize('decomposed', [True, False], ids=['decomposed', 'full'])
def test_masa_2d_map_is_what_it_applies_at_the_query(impl, decomposed):
    """Weighting v by the map gives the module's output at the query (before the LCE and the output
    projection), as it computes it; the decay is gamma_h ** Manhattan distance."""
    torch.manual_seed(0)
    masa = ManhattanSelfAttention2d(32, num_heads=4, decomposed=decomposed, init_value=1., heads_range=3.,
                                    impl=impl).eval()
    x = torch.randn(2, 32, 6, 7)
    merged = []
    masa.attention.out_proj.register_forward_pre_hook(lambda module, args: merged.append(args[0]))
    with torch.no_grad():
        maps = masa.attention_maps(x, (4, 2))
        masa(x)
        tokens = x.permute(0, 2, 3, 1)
        v = masa.attention.v_proj(tokens)
        applied = (merged[0] - masa.attention.lepe(v))[:, 4, 2].view(2, 4, -1)
        weighted = torch.einsum('bnyx,byxnd->bnd', maps.attention, v.view(2, 6, 7, 4, -1))
    # the same float32 function in another order: q k^T, the softmax and (.) v over the 6 x 7 = 42 tokens
    assert_close(weighted, applied, two_implementations(torch.float32, 42, 3))
    # the softmax's normalisation (the rows', then the columns' for decomposed maps) and this sum, over 42
    assert torch.allclose(maps.attention.sum((2, 3)), torch.ones(2, 4), atol=two_implementations(torch.float32, 42, 2))
    ys, xs = torch.meshgrid(torch.arange(6.), torch.arange(7.), indexing='ij')
    distance = (ys - 4).abs() + (xs - 2).abs()
    # one float32 power each, in another order of its multiplications (as test_decay_picture.py)
    power = two_implementations(torch.float32, 1)
    assert torch.allclose(maps.decay, maps.gammas[:, None, None] ** distance, rtol=power, atol=0)
    assert torch.equal(maps.gammas, masa.relpos.decay.exp())
    log_decay = masa.relpos.decay_2d(6, 7)[:, 4 * 7 + 2].view(-1, 6, 7)
    assert torch.equal(maps.decay, log_decay.exp())


def test_out_of_range_stage_block_and_query_are_one_line_errors():
    backbone = random_rmt('fast')
    images = torch.zeros(IMAGE_SHAPE)
    masa = ManhattanSelfAttention2d(16, num_heads=2)
    cases = [
        (lambda: backbone.attention_maps(images, 4, 0), r'^RMT: stage 4 is out of range: the stages are 0-3\.$'),
        (lambda: backbone.attention_maps(images, 1, 2), r'^RMT: block 2 is out of range: stage 1 has blocks 0-1\.$'),
        (lambda: backbone.attention_maps(images, 1, 0, (13, 0)),
         r'^query \(13, 0\) is outside the 13x17 token grid; give 0 <= y < 13 and 0 <= x < 17\.$'),
        (lambda: masa.attention_maps(torch.zeros(1, 8, 4, 4)),
         r'^ManhattanSelfAttention2d expects \(N, 16, H, W\) inputs \(embed_dims=16\), got \(1, 8, 4, 4\)\.$'),
        (lambda: masa.attention_maps(torch.zeros(1, 16, 4, 4), (0, -1)), r'^query \(0, -1\) is outside'),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
