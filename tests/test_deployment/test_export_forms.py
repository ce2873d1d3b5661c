"""The export forms compute what the layers they stand in for compute, and
ResT's attention normalisation keeps float32 precision on near-uniform maps."""
import pytest
import torch
from mmcv.ops import RoIAlign
from mmdet.models.roi_heads.roi_extractors import SingleRoIExtractor
from torch import nn

from mmrmt.deployment import export_forms, relative_difference
from mmrmt.deployment.export_forms import adaptive_average_pool
from mmrmt.deployment.tensor_mode import random_proposals
from mmrmt.models.backbones.rest import softmax_instance_norm


@pytest.mark.parametrize('output_size', [1, 2, 3, 6, (2, None)])
@pytest.mark.parametrize('shape', [(7, 10), (13, 16), (4, 4), (5, 3)])
def test_adaptive_average_pool_matches_torch(output_size, shape):
    x = torch.randn(2, 3, *shape, dtype=torch.float64)
    pool = nn.AdaptiveAvgPool2d(output_size)
    torch.testing.assert_close(adaptive_average_pool(pool, x), pool(x), rtol=0, atol=1e-12)


def test_roi_pooling_export_form_matches_mmdet():
    extractor = SingleRoIExtractor(dict(type='RoIAlign', output_size=7, sampling_ratio=0), out_channels=4,
                                   featmap_strides=[4, 8, 16, 32])
    feats = tuple(torch.randn(1, 4, 512 // stride, 640 // stride) for stride in (4, 8, 16, 32))
    boxes = random_proposals(60, 512, 640, torch.Generator().manual_seed(0))
    rois = torch.cat((torch.zeros(len(boxes), 1), boxes), 1)
    assert set(extractor.map_roi_levels(rois, 4).tolist()) == {0, 1, 2, 3}
    expected = extractor(feats, rois)
    with export_forms(extractor):
        exported = extractor(feats, rois)
    assert 'forward' not in vars(extractor), 'the export form outlived its context'
    torch.testing.assert_close(exported, expected, rtol=1e-5, atol=1e-6)
    assert isinstance(extractor.roi_layers[0], RoIAlign)


def reference_softmax_instance_norm(scores: torch.Tensor) -> torch.Tensor:
    """nn.InstanceNorm2d(heads) of the softmax, as the upstream ResT computes it."""
    return nn.InstanceNorm2d(scores.shape[1])(scores.softmax(dim=-1))


def test_rest_attention_normalisation_equals_upstream_and_keeps_float32_precision():
    generator = torch.Generator().manual_seed(0)
    peaked = torch.randn(2, 4, 50, 30, generator=generator, dtype=torch.float64) * 3
    torch.testing.assert_close(softmax_instance_norm(peaked), reference_softmax_instance_norm(peaked),
                               rtol=0, atol=1e-10)
    # Near-uniform attention, as at initialisation: the upstream float32 computation
    # keeps few digits; this one keeps float32's precision.
    uniform = torch.randn(2, 4, 500, 70, generator=generator, dtype=torch.float64) * 1e-3
    exact = reference_softmax_instance_norm(uniform)
    error = (softmax_instance_norm(uniform.float()).double() - exact).abs().max() / exact.abs().max()
    upstream_error = (reference_softmax_instance_norm(uniform.float()).double() - exact).abs().max() \
        / exact.abs().max()
    assert error < 1e-5 < upstream_error


def test_relative_difference_is_relative_to_the_largest_value_and_checks_shapes():
    expected = [torch.tensor([1.0, -4.0]), torch.tensor([[2.0]])]
    actual = [torch.tensor([1.0, -4.004]).numpy(), torch.tensor([[2.001]]).numpy()]
    assert relative_difference(expected, actual) == pytest.approx(1e-3, rel=1e-3)  # 0.004 / 4
    with pytest.raises(ValueError, match=r'output 1: the graph gave shape \(1,\), torch \(1, 1\)'):
        relative_difference(expected, [actual[0], torch.tensor([2.0]).numpy()])


@pytest.mark.parametrize('decomposed', [True, False], ids=['decomposed', 'full'])
def test_rmt_attention_export_form_equals_eager(decomposed, monkeypatch):
    """The attention's export form (own projections, channels-last rotary, one layout per pass) computes
    the eager fast path's output up to float32 rounding."""
    from mmrmt.models.backbones.rmt import fast_attention, fast_relative_position
    torch.manual_seed(0)
    attention = fast_attention.FastManhattanSelfAttention(32, 2, decomposed).eval()
    relpos = fast_relative_position.FastManhattanRelPos(32, 2, init_value=2.0, heads_range=4.0)
    norm = nn.LayerNorm(32)
    x = torch.randn(2, 5, 7, 32)
    with torch.no_grad():
        expected = attention(x, relpos, norm)
        for module in (fast_attention, fast_relative_position):
            monkeypatch.setattr(module, 'is_exporting', lambda: True)
        assert relpos.fast_tables(5, 7, decomposed, x.dtype).rotation is None  # the export tables
        exported = attention(x, relpos, norm)
    torch.testing.assert_close(exported, expected, rtol=1e-5, atol=1e-5)
