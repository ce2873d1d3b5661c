"""The fast MaSA computes what the reference (the spec, step by step) computes."""
import copy

import pytest
import torch

from mmrmt.models import RMT
from mmrmt.models.backbones.rmt.attention import ManhattanSelfAttention
from mmrmt.models.backbones.rmt.block import RMTBlock
from mmrmt.models.backbones.rmt.fast_attention import FastManhattanSelfAttention
from mmrmt.models.backbones.rmt.fast_block import FastRMTBlock, ImageChunkedStem
from mmrmt.models.backbones.rmt.fast_ffn import FastConvFFN
from mmrmt.models.backbones.rmt.fast_relative_position import FastManhattanRelPos
from mmrmt.models.backbones.rmt.ffn import ConvFFN
from mmrmt.models.backbones.rmt.relative_position import ManhattanRelPos
from mmrmt.models.layers import fused_attention, run_mode
from helpers.attended_dtypes import BF16_ATTENDED_IN
from helpers.precision import assert_within_rounding, run
from helpers.rounding import assert_close, assert_within_low_precision, two_implementations

# Tiny arch covering decomposed and full stages, with and without layer scale.
TINY = dict(embed_dims=[16, 32, 48, 64], depths=[1, 2, 1, 1], num_heads=[2, 2, 4, 4],
            mlp_ratios=[2, 2, 2, 2], init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6],
            decomposed=[True, False, True, False], layer_scales=[False, False, True, True],
            layer_scale_init=0.5)


def attention_pair(decomposed: bool, embed_dims: int = 32, num_heads: int = 4):
    torch.manual_seed(0)
    fast = FastManhattanSelfAttention(embed_dims, num_heads, decomposed)
    for param in fast.parameters():  # random biases too, so every term matters
        torch.nn.init.normal_(param, std=0.3)
    reference = ManhattanSelfAttention(embed_dims, num_heads, decomposed)
    reference.load_state_dict(fast.state_dict())
    return fast, reference, FastManhattanRelPos(embed_dims, num_heads, 2, 4)


def backbone_pair(arch: dict = TINY):
    torch.manual_seed(0)
    fast = RMT(arch, drop_path_rate=0.)
    fast.init_weights()
    reference = RMT(arch, drop_path_rate=0., impl='reference')
    reference.load_state_dict(fast.state_dict())
    return fast, reference


def grads(module: torch.nn.Module) -> dict:
    return {name: param.grad for name, param in module.named_parameters()}


#: MaSA's steps in sequence, each a reduction: the q, k, v projections, q k^T,
#: the softmax, (.) v, the local conv, the output projection.
ATTENTION_DEPTH = 7


def cache_tolerance(x: torch.Tensor, dtype: torch.dtype = torch.float32) -> float:
    """Fast and reference MaSA apart by at most this (relative) on ``x``: the longest
    reduction is over the channels or the tokens attended (every token of the map)."""
    return two_implementations(dtype, max(x.shape[-1], x.shape[1] * x.shape[2]), ATTENTION_DEPTH)


def attention_results(module, relpos, x, weights=None, dtype=torch.float32, autocast=False):
    """MaSA's output on ``x`` in ``dtype`` (copies of the module and the relpos), and
    with ``weights`` the input's and every parameter's gradient (by parameter name)."""
    module, relpos = copy.deepcopy(module).to(dtype), copy.deepcopy(relpos).to(dtype)
    x = x.to(dtype).requires_grad_(weights is not None)
    with torch.autocast('cpu', dtype=torch.bfloat16, enabled=autocast), torch.set_grad_enabled(weights is not None):
        out = module(x, relpos)
    if weights is None:
        return [out]
    params = [param for _, param in sorted(module.named_parameters())]  # the same names on both paths
    return [out, *torch.autograd.grad((out.to(dtype) * weights.to(dtype)).sum(), [x, *params])]


def assert_fast_within_rounding(fast, reference, relpos, x, weights=None):
    """The fast MaSA (float32) within float32's rounding of the reference's float64
    result, given the reference's float32 error (its output, input and parameter
    gradients; a parameter's gradient sums over every position)."""
    results = [attention_results(module, relpos, x, weights, dtype)
               for module, dtype in ((fast, torch.float32), (reference, torch.float32), (reference, torch.float64))]
    terms = [1, 1] + [x.numel() // x.shape[-1]] * (len(results[0]) - 2)
    assert_within_low_precision(*results, torch.float32, terms[:len(results[0])])


@pytest.mark.parametrize('decomposed', [True, False])
@pytest.mark.parametrize('batch,height,width', [(3, 7, 11), (1, 13, 5), (2, 1, 9)])
def test_fast_attention_equals_reference_outputs_and_gradients(decomposed, batch, height, width):
    fast, reference, relpos = attention_pair(decomposed)
    x = torch.randn(batch, height, width, 32)
    assert_fast_within_rounding(fast, reference, relpos, x, torch.randn_like(x))


def test_fast_backbone_equals_reference_outputs_and_gradients():
    """Outputs and gradients of the fast path within float32's rounding of the
    reference's float64 ones, given the reference's float32 error."""
    fast, reference = backbone_pair()
    x = torch.randn(2, 3, 45, 71)  # odd sizes: grids 12x18, 6x9, 3x5, 2x3
    exact, full = run(copy.deepcopy(reference).double(), x.double()), run(reference, x)
    assert_within_rounding(run(fast, x), torch.float32, full, exact)


@pytest.mark.parametrize('decomposed', [True, False])
@pytest.mark.parametrize('batch,height,width', [(3, 7, 11), (3, 5, 7), (2, 17, 20), (2, 66, 3)])
@pytest.mark.parametrize('logits_bytes', [16 * 2**20, 1])
def test_fast_attention_without_autograd_equals_reference(decomposed, batch, height, width, logits_bytes):
    """Inference attends short sequences with explicit GEMMs (hand softmax under 16
    tokens, torch's from 16, a few images at a time when the logits are large) and
    longer ones (66 > explicit_max_len) with SDPA; 5x7 full grids (35 tokens) explicitly, one mask for
    every chunk."""
    fast, reference, relpos = attention_pair(decomposed)
    fast.explicit_logits_bytes = logits_bytes  # 1 byte: one image per GEMM
    assert_fast_within_rounding(fast, reference, relpos, torch.randn(batch, height, width, 32))


def assert_backbone_outputs_within_rounding(fast, reference, x):
    """Without autograd: the fast outputs within float32's rounding of the reference's in float64."""
    with torch.no_grad():
        exact, full, ours = copy.deepcopy(reference).double()(x.double()), reference(x), fast(x)
    assert_within_low_precision(ours, full, exact, torch.float32, [1] * len(exact))


def test_fast_backbone_inference_in_image_chunks_equals_reference(monkeypatch):
    fast, reference = backbone_pair()
    fast.eval(), reference.eval()
    monkeypatch.setattr(run_mode, 'INFERENCE_CHUNK_BYTES', 1)  # the stem and every block image by image
    assert_backbone_outputs_within_rounding(fast, reference, torch.randn(3, 3, 45, 71))


def test_a_trace_without_grad_holds_no_image_chunks_and_serves_any_batch(monkeypatch):
    """FLOP counters trace in CPU inference (eval, no grad): the trace is the whole batch's plain ops."""
    fast, _ = backbone_pair()
    fast.eval()
    monkeypatch.setattr(run_mode, 'INFERENCE_CHUNK_BYTES', 1)  # eagerly, the stem and every block image by image
    with torch.no_grad():
        traced = torch.jit.trace(fast, torch.randn(3, 3, 45, 71), check_trace=False)
        x = torch.randn(2, 3, 45, 71)
        exact = copy.deepcopy(fast).double()(x.double())
        # the traced outputs within float32's rounding of float64's, bounded by how much this network
        # amplifies rounding (the eager float32 error)
        assert_within_low_precision(traced(x), fast(x), exact, torch.float32, [1] * len(exact))


def test_nothing_is_split_in_train_mode_without_grad(monkeypatch):
    """No autograd but train mode (BatchNorm on batch statistics, drop path's draws): the stem and the blocks
    see the whole batch."""
    fast, reference = backbone_pair()
    monkeypatch.setattr(run_mode, 'INFERENCE_CHUNK_BYTES', 1)
    block, batches = fast.layers[0].blocks[0], []
    monkeypatch.setattr(block, '_forward', lambda part, relpos, run=block._forward:
                        batches.append(len(part)) or run(part, relpos))
    assert_backbone_outputs_within_rounding(fast, reference, torch.randn(3, 3, 45, 71))
    assert batches == [3]
    for ours, theirs in zip(fast.patch_embed.proj.modules(), reference.patch_embed.proj.modules()):
        if isinstance(ours, torch.nn.BatchNorm2d):
            # a batch mean: over the 3 x 23 x 36 pixels of the first map
            assert_close(ours.running_mean, theirs.running_mean, two_implementations(torch.float32, 3 * 23 * 36))


@pytest.mark.parametrize('attended_in', BF16_ATTENDED_IN)
@pytest.mark.parametrize('explicit_max_len', [64, 16])
def test_fast_path_under_bf16_autocast_is_finite_and_close(monkeypatch, attended_in, explicit_max_len):
    """Eval, no autograd: the outputs within bfloat16's rounding of the reference's in float64, with the
    attention core in bfloat16 (short sequences with float32 scores) or in float32 (where its kernel would
    raise), short sequences through explicit GEMMs or (``explicit_max_len`` 16: the 18-token rows) fused."""
    for dtypes in fused_attention.CPU_ATTENTION_DTYPES:
        monkeypatch.setitem(dtypes, torch.bfloat16, attended_in)
    monkeypatch.setattr(FastManhattanSelfAttention, 'explicit_max_len', explicit_max_len)
    fast, reference = backbone_pair()
    fast.eval(), reference.eval()
    x = torch.randn(2, 3, 45, 71)
    with torch.no_grad():
        exact, full = reference.double()(x.double()), fast(x)
        with torch.autocast('cpu', dtype=torch.bfloat16):
            outputs = fast(x)
    assert_within_low_precision(outputs, full, exact, torch.bfloat16, [1] * len(exact))


def test_fast_backbone_trains_under_bf16_autocast():
    """Outputs and every gradient within bfloat16's rounding of the reference's in float64."""
    fast, reference = backbone_pair()
    x = torch.randn(2, 3, 45, 71)
    exact, full = run(reference.double(), x.double()), run(fast, x)
    low = run(fast, x, torch.bfloat16)
    assert all(grad.dtype == torch.float32 for grad in grads(fast).values())
    assert_within_rounding(low, torch.bfloat16, full, exact)


@pytest.mark.parametrize('attended_in', BF16_ATTENDED_IN)
@pytest.mark.parametrize('decomposed', [True, False])
def test_fast_attention_trains_under_bf16_autocast(monkeypatch, decomposed, attended_in):
    """Output and gradients within bfloat16's rounding of the reference's in float64, with the attention
    core in bfloat16 (as on other devices) or in float32 (as on the CPU)."""
    for dtypes in fused_attention.CPU_ATTENTION_DTYPES:
        monkeypatch.setitem(dtypes, torch.bfloat16, attended_in)
    fast, reference, relpos = attention_pair(decomposed)
    x, weights = torch.randn(2, 9, 11, 32), torch.randn(2, 9, 11, 32)

    low = attention_results(fast, relpos, x, weights, autocast=True)
    full = attention_results(fast, relpos, x, weights)
    exact = attention_results(reference, relpos, x, weights, torch.float64)
    positions = x.numel() // x.shape[-1]  # a projection's gradient sums over them
    assert_within_low_precision(low, full, exact, torch.bfloat16, [1, 1] + [positions] * (len(exact) - 2))


def test_fast_is_default_and_reference_selectable():
    """Every class the two implementations differ in is the chosen one's, throughout the model."""
    def classes(model: RMT) -> set:
        return {type(m) for m in model.modules()
                if isinstance(m, (ManhattanSelfAttention, ManhattanRelPos, RMTBlock, ConvFFN, torch.nn.Sequential))}

    assert classes(RMT(TINY)) == {FastManhattanSelfAttention, FastManhattanRelPos, FastRMTBlock, FastConvFFN,
                                  ImageChunkedStem}
    assert classes(RMT(TINY, impl='reference')) == {ManhattanSelfAttention, ManhattanRelPos, RMTBlock, ConvFFN,
                                                    torch.nn.Sequential}


@pytest.mark.parametrize('bad', ['flash', 'Fast', None, ['fast']])
def test_unknown_impl_is_a_clear_error(bad):
    with pytest.raises(ValueError, match=r"RMT: impl must be one of \('fast', 'flex', 'reference'\)"):
        RMT(TINY, impl=bad)


def test_tables_are_built_once_per_grid_and_dtype():
    relpos = FastManhattanRelPos(32, 4, 2, 4)
    first = relpos.fast_tables(5, 7, True, torch.float32)
    assert relpos.fast_tables(5, 7, True, torch.float32) is first
    assert relpos.fast_tables(5, 7, True, torch.bfloat16) is not first
    assert relpos.fast_tables(5, 7, True, torch.bfloat16).cos.dtype == torch.bfloat16
    assert relpos.fast_tables(7, 5, True, torch.float32) is not first
    assert relpos.fast_tables(5, 7, False, torch.float32).mask.shape == (1, 4, 35, 35)


def test_tables_match_the_reference_tables():
    relpos = FastManhattanRelPos(32, 4, 2, 4)
    sin, cos = relpos.rotary(5, 7)
    tables = relpos.fast_tables(5, 7, True, torch.float32)  # complex: one rotation per pair
    assert tables.rotation.dtype == torch.complex64 and tables.cos is None
    assert torch.equal(tables.rotation.real, cos[..., ::2]) and torch.equal(tables.rotation.imag, sin[..., ::2])
    half = relpos.fast_tables(5, 7, True, torch.bfloat16)  # no complex bfloat16: cos and signed sin
    assert half.rotation is None
    assert torch.equal(half.cos, cos.bfloat16()) and torch.equal(half.signed_sin.abs(), sin.bfloat16().abs())
    assert torch.equal(tables.mask_h[0], relpos.decay_1d(5))
    assert torch.equal(tables.mask_w[0], relpos.decay_1d(7))
    assert torch.equal(relpos.fast_tables(5, 7, False, torch.float32).mask[0], relpos.decay_2d(5, 7))


def test_cache_is_not_in_the_state_dict_and_keeps_the_checkpoint_buffers():
    model = RMT(TINY).eval()
    with torch.no_grad():
        model(torch.randn(1, 3, 32, 32))  # fills the caches
    keys = [key for key in model.state_dict() if key.startswith('layers.0.Relpos')]
    assert keys == ['layers.0.Relpos.angle', 'layers.0.Relpos.decay']
    assert model.state_dict()['layers.2.Relpos.decay'].shape == (4, )
    assert model.state_dict()['layers.2.Relpos.angle'].shape == (12, )


def test_cache_follows_load_state_dict_in_place_edits_and_to():
    fast, reference, relpos = attention_pair(False)
    x = torch.randn(2, 4, 5, 32)
    fast(x, relpos)  # cache the tables of the initial decay
    other = ManhattanRelPos(32, 4, 5, 1)  # another decay: another mask
    relpos.load_state_dict(other.state_dict())
    assert_close(fast(x, relpos), reference(x, relpos), cache_tolerance(x))
    with torch.no_grad():
        relpos.decay.mul_(2)
        relpos.angle.mul_(0.5)
    assert_close(fast(x, relpos), reference(x, relpos), cache_tolerance(x))
    for module in (fast, reference, relpos):
        module.to(torch.float64)
    out = fast(x.double(), relpos)
    assert out.dtype == torch.float64
    assert_close(out, reference(x.double(), relpos), cache_tolerance(x, torch.float64))


@pytest.mark.parametrize('decomposed', [True, False])
def test_cache_follows_edits_through_data(decomposed):
    """``.data`` edits bump no version counter; the tables still follow the buffers."""
    fast, reference, relpos = attention_pair(decomposed)
    x = torch.randn(2, 4, 5, 32)
    with torch.no_grad():
        fast(x, relpos)  # cache the tables of the initial buffers
        relpos.decay.data.mul_(2)
        assert_close(fast(x, relpos), reference(x, relpos), cache_tolerance(x))
        relpos.angle.data[:4] = 0.25
        assert_close(fast(x, relpos), reference(x, relpos), cache_tolerance(x))
        relpos.decay.data = torch.full_like(relpos.decay, -0.5)
        assert_close(fast(x, relpos), reference(x, relpos), cache_tolerance(x))


def test_cache_survives_deepcopy_consistently():
    fast, reference, relpos = attention_pair(True)
    x = torch.randn(1, 6, 6, 32)
    fast(x, relpos)
    copied = copy.deepcopy(relpos)
    with torch.no_grad():
        copied.decay.mul_(3)
    assert_close(fast(x, copied), reference(x, copied), cache_tolerance(x))
    assert_close(fast(x, relpos), reference(x, relpos), cache_tolerance(x))


def test_cache_is_bounded_in_entries_and_bytes():
    relpos = FastManhattanRelPos(32, 4, 2, 4)
    for size in range(1, 12):
        relpos.fast_tables(size, size + 1, True, torch.float32)
    assert len(relpos._cache) == relpos.cache_entries
    assert next(reversed(relpos._cache))[:2] == (11, 12)  # the newest stays
    relpos.cache_bytes = 1  # over budget: only the newest entry is kept
    relpos.fast_tables(30, 30, False, torch.float32)
    assert list(relpos._cache) == [(30, 30, False, torch.float32, torch.device('cpu'))]


def test_tables_built_under_inference_mode_serve_training():
    fast, reference, relpos = attention_pair(True)
    x = torch.randn(1, 5, 6, 32)
    with torch.inference_mode():
        fast(x, relpos)
    x = x.requires_grad_()
    fast(x, relpos).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
