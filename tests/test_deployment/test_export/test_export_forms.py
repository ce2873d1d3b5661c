"""The export forms compute what the layers they stand in for compute, and
ResT's attention deviations keep float32 precision on near-uniform maps."""
import importlib
import io
import math

import pytest
import torch
from mmcv.ops import RoIAlign
from mmdet.models.roi_heads.roi_extractors import SingleRoIExtractor
from torch import nn

from mmrmt.deployment.export import (exact_roi_min_side, export_forms, export_implementation, float32_roi_pooling,
                                     random_proposals)
from mmrmt.deployment.export.export_forms import adaptive_average_pool
from mmrmt.deployment.export.rest_forms import ExportEfficientMultiHeadAttention
from mmrmt.deployment.export.rmt_forms import attention_by_grid_rows
from mmrmt.deployment.runtime import relative_difference
from mmrmt.models.backbones.rest import FastEfficientMultiHeadAttention, softmax_deviations
from mmrmt.models.backbones.rmt import RMT
from mmrmt.models.backbones.rmt.fast_attention import FastManhattanSelfAttention
from mmrmt.models.backbones.rmt.fast_relative_position import FastManhattanRelPos
from mmrmt.models.layers.plain_attention import plain_attention
from helpers.backbones import RMT_TINY
from helpers.rounding import LAMBDA, assert_close, two_implementations, unit_roundoff


@pytest.mark.parametrize('output_size', [1, 2, 3, 6, (2, None)])
@pytest.mark.parametrize('shape', [(7, 10), (13, 16), (4, 4), (5, 3)])
def test_adaptive_average_pool_matches_torch(output_size, shape):
    x = torch.randn(2, 3, *shape, dtype=torch.float64)
    pool = nn.AdaptiveAvgPool2d(output_size)
    # one average over a cell: at most the whole map's terms
    assert_close(adaptive_average_pool(pool, x), pool(x), two_implementations(torch.float64, shape[0] * shape[1]))


@pytest.mark.parametrize('opset', [11, 16])
def test_roi_pooling_export_form_matches_mmdet(opset):
    """From opset 16 on for every RoI; below (shifted RoIs, no half-pixel RoiAlign) for RoIs of at least
    one feature pixel on their level, what exact_roi_min_side says."""
    extractor = SingleRoIExtractor(dict(type='RoIAlign', output_size=7, sampling_ratio=0), out_channels=4,
                                   featmap_strides=[4, 8, 16, 32])
    assert exact_roi_min_side(extractor, opset) == (4 if opset < 16 else 0)
    feats = tuple(torch.randn(1, 4, 512 // stride, 640 // stride) for stride in (4, 8, 16, 32))
    boxes = random_proposals(60, 512, 640, torch.Generator().manual_seed(0), exact_roi_min_side(extractor, opset))
    rois = torch.cat((torch.zeros(len(boxes), 1), boxes), 1)
    assert set(extractor.map_roi_levels(rois, 4).tolist()) == {0, 1, 2, 3}
    expected = extractor(feats, rois)
    with export_forms(extractor, opset):
        exported = extractor(feats, rois)
    assert 'forward' not in vars(extractor), 'the export form outlived its context'
    # an output cell averages 4 bilinear taps at each of up to (128 / 7 + 1)**2 samples
    # (adaptive sampling on the largest, 128-pixel level)
    assert_close(exported, expected, two_implementations(torch.float32, 4 * (128 // 7 + 1) ** 2))
    assert isinstance(extractor.roi_layers[0], RoIAlign)


def test_roi_pooling_below_opset_16_differs_for_rois_thinner_than_a_feature_pixel():
    """What the tool's note and docs/deployment.md warn of: opset-10 RoiAlign stretches them."""
    extractor = SingleRoIExtractor(dict(type='RoIAlign', output_size=7, sampling_ratio=0), out_channels=4,
                                   featmap_strides=[4, 8, 16, 32])
    feats = tuple(torch.randn(1, 4, 128 // stride, 128 // stride) for stride in (4, 8, 16, 32))
    rois = torch.tensor([[0, 20.0, 30.0, 22.0, 70.0]])  # 2 px wide: half a stride-4 pixel
    with export_forms(extractor, 11):
        exported = extractor(feats, rois)
    expected = extractor(feats, rois)
    # far more than the rounding the exact RoIs are held to above: a different value, not rounding
    rounding = two_implementations(torch.float32, 4 * (128 // 7 + 1) ** 2) * expected.abs().max()
    assert (exported - expected).abs().max() > 100 * rounding


def test_plain_attention_equals_sdpa_with_broadcast_mask():
    """Any leading dims broadcast, e.g. 5-D operands with a (1, n, L, L) log-decay mask."""
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, 10, 8, generator=generator, dtype=torch.float64) for _ in range(3))
    mask = torch.randn(1, 4, 10, 10, generator=generator, dtype=torch.float64)
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(t.flatten(0, 1) for t in (q, k, v)), attn_mask=mask, scale=0.3).view(q.shape)
    # two float64 computations of q k^T (8 terms), the softmax and (.) v (10 keys each): 3 steps
    tolerance = two_implementations(torch.float64, 10, 3)
    assert_close(plain_attention(q, k, v, mask, 0.3), expected, tolerance)
    assert_close(plain_attention(q, k, v), torch.nn.functional.scaled_dot_product_attention(q, k, v), tolerance)


def test_rest_softmax_deviations_keep_float32_precision_on_near_uniform_attention():
    """Near-uniform attention, as at initialisation: the upstream float32 computation (softmax, then the
    instance norm's mean subtracted) keeps few digits of the deviations from 1 / N'; ResT's keeps
    float32's precision."""
    uniform = torch.randn(2, 4, 500, 70, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 1e-3
    exact = uniform.softmax(dim=-1) - 1 / 70
    error = (softmax_deviations(uniform.float()).double() - exact).abs().max() / exact.abs().max()
    probabilities = uniform.float().softmax(dim=-1)
    upstream = probabilities - probabilities.mean(dim=(-2, -1), keepdim=True)
    upstream_error = (upstream.double() - exact).abs().max() / exact.abs().max()
    # float32's rounding of a softmax row of 70 positive terms (no cancellation):
    # LAMBDA sqrt(70) u; the upstream form loses digits to the near-uniform map
    float32_rounding = LAMBDA * math.sqrt(70) * unit_roundoff(torch.float32)
    assert error < float32_rounding < upstream_error


def test_relative_difference_is_relative_to_the_largest_value_and_checks_shapes():
    expected = [torch.tensor([1.0, -4.0]), torch.tensor([[2.0]])]
    actual = [torch.tensor([1.0, -4.004]).numpy(), torch.tensor([[2.001]]).numpy()]
    # 0.004 / 4: float32's 4.004 is within 4 u of it, an error of 1000 u relative to the difference 0.004
    assert relative_difference(expected, actual) == pytest.approx(1e-3, rel=1001 * unit_roundoff(torch.float32))
    with pytest.raises(ValueError, match=r'output 1: the graph gave shape \(1,\), torch \(1, 1\)'):
        relative_difference(expected, [actual[0], torch.tensor([2.0]).numpy()])


@pytest.mark.parametrize('decomposed', [True, False], ids=['decomposed', 'full'])
def test_rmt_attention_graph_form_equals_eager(decomposed):
    """The attention's graph form (own projections, real channels-last rotary, one layout per pass, plain
    attention), which a recorded graph computes, gives the eager fast path's output up to float32
    rounding, from tables outside the eager cache."""
    torch.manual_seed(0)
    attention = FastManhattanSelfAttention(32, 2, decomposed).eval()
    relpos = FastManhattanRelPos(32, 2, init_value=2.0, heads_range=4.0)
    norm = nn.LayerNorm(32)
    x = torch.randn(2, 5, 7, 32)
    with torch.no_grad():
        expected = attention(x, relpos, norm)
        assert relpos.graph_tables(5, 7, decomposed, x.dtype).rotation is None  # real tables
        graph = attention.graph_forward(x, relpos, norm)
    assert len(relpos._cache) == 1  # the eager tables only
    # MaSA's 7 steps (tests/test_models/test_backbones/test_rmt_attention.py) over 32 channels
    assert_close(graph, expected, two_implementations(torch.float32, 5 * 7, 7))  # or the 35 tokens


def test_rmt_graph_attends_over_4d_logits():
    """OpenVINO fuses a graph's attention (MatMul, Add, Softmax, MatMul) into one kernel over 4-D operands
    only: every softmax of a recorded RMT graph, the decomposed stages' rows and columns included, is over
    4-D logits (before, theirs were 5-D: OpenVINO ran four nodes with the logits whole between them)."""
    import onnx
    buffer = io.BytesIO()
    torch.onnx.export(RMT(arch=RMT_TINY).eval(), (torch.randn(1, 3, 64, 96), ), buffer, dynamo=False)
    graph = onnx.shape_inference.infer_shapes(onnx.load_from_string(buffer.getvalue())).graph
    ranks = {info.name: len(info.type.tensor_type.shape.dim) for info in graph.value_info}
    logits_ranks = [ranks[node.input[0]] for node in graph.node if node.op_type == 'Softmax']
    assert len(logits_ranks) == 2 * (1 + 2) + 1 + 1  # rows and columns of the 3 decomposed blocks, 2 full
    assert set(logits_ranks) == {4}


@pytest.mark.parametrize('heads', [1, 4])
def test_rest_attention_graph_form_equals_eager(heads):
    """ResT's attention in ONNX's ops (plain attention; mixed heads with the tanh form of expm1) computes
    the fast attention's output (SDPA, the lean core) within float64 rounding."""
    torch.manual_seed(0)
    attention = FastEfficientMultiHeadAttention(32, heads, sr_ratio=2).double().eval()
    q, k, v = (torch.randn(2, 60, heads, 32 // heads, dtype=torch.float64) for _ in range(3))
    k, v = k[:, :15], v[:, :15]
    with torch.no_grad():
        expected = attention.attend(q, k, v)
        graph = attention.graph_attend(q, k, v)
    # the map's statistics over its 60 x 15 scores, softmax and (.) v
    assert_close(graph, expected, two_implementations(torch.float64, 60 * 15, 6))


def test_export_implementation_restores_the_classes_when_the_export_fails():
    attention = FastEfficientMultiHeadAttention(32, 4, sr_ratio=1)
    with pytest.raises(RuntimeError, match='export failed'), export_implementation(attention):
        assert type(attention) is ExportEfficientMultiHeadAttention
        raise RuntimeError('export failed')
    assert type(attention) is FastEfficientMultiHeadAttention


def test_roi_pooling_runs_on_reduced_precision_cpu_features_in_float32():
    """mmcv's CPU RoIAlign takes float32/float64 only: under bf16 autocast (benchmark.py --precision bf16)
    a two-stage detector's pooling gets bf16 features. Within float32_roi_pooling it pools their exact
    float32 values (a bf16 -> float32 cast is exact) at the float32 RoIs (not rounded to bf16, as mmdet's
    extractor would: 4-pixel steps at x = 1000), and the float32 forward goes with the block."""
    extractor = SingleRoIExtractor(dict(type='RoIAlign', output_size=7, sampling_ratio=0), out_channels=4,
                                   featmap_strides=[4, 8, 16, 32])
    feats = tuple(torch.randn(1, 4, 1024 // stride, 1024 // stride).bfloat16() for stride in (4, 8, 16, 32))
    boxes = random_proposals(20, 1024, 1024, torch.Generator().manual_seed(0))
    rois = torch.cat((torch.zeros(len(boxes), 1), boxes), 1)
    assert not torch.equal(rois.bfloat16().float(), rois)
    with pytest.raises(RuntimeError, match='not implemented for .BFloat16'):
        extractor(feats, rois)
    with float32_roi_pooling(extractor), torch.autocast('cpu', dtype=torch.bfloat16):
        pooled = extractor(feats, rois)
    assert torch.equal(pooled, extractor(tuple(feat.float() for feat in feats), rois))
    assert 'forward' not in vars(extractor)


@pytest.mark.parametrize('logits_bytes', [2**20, 1], ids=['one-run', 'a-grid-row-a-run'])
def test_rmt_grid_row_attention_equals_attention_with_the_decay_table(logits_bytes, monkeypatch):
    """Full MaSA with its log-decay added by grid row and column, in one run or a grid row a run,
    computes the attention with the (hw, hw) Manhattan decay table."""
    attention_module = importlib.import_module('mmrmt.deployment.export.plain_attention')
    monkeypatch.setattr(attention_module, 'EXPORT_LOGITS_BYTES', logits_bytes)
    monkeypatch.setattr(attention_module, 'LOGITS_OVER_QUERIES', 0)
    relpos = FastManhattanRelPos(32, 4, init_value=2.0, heads_range=4.0).double()
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5 * 7, 8, generator=generator, dtype=torch.float64) for _ in range(3))
    expected = plain_attention(q, k, v, relpos.decay_2d(5, 7)[None], 0.3)
    by_rows = attention_by_grid_rows(q, k, v, relpos.decay_1d(5)[None], relpos.decay_1d(7)[None], 0.3)
    # two float64 computations of q k^T (8 terms), the decay's sum, the softmax and (.) v (35 keys): 4 steps
    assert_close(by_rows, expected, two_implementations(torch.float64, 35, 4))
