"""In a graph of fixed shapes attention is computed in runs (of images, heads, rows or queries): each
run's logits within the budget, the outputs those of one pass (float64), for RMT's and ResT's
single-head attention (plain_attention) and ResT's mixed-head core (instance norm over each map)."""
import importlib

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from mmrmt.deployment.export import fixed_shapes
from mmrmt.deployment.export.plain_attention import attention_runs, fixed_shape_runs
from mmrmt.deployment.export.rest_forms import ExportEfficientMultiHeadAttention
from mmrmt.models.layers.plain_attention import plain_attention
from helpers.rounding import assert_close, two_implementations

#: The modules (their names are shadowed by the function of the same name).
attention_module = importlib.import_module('mmrmt.deployment.export.plain_attention')
layers_attention = importlib.import_module('mmrmt.models.layers.plain_attention')


def randn(*shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.fixture
def fixed_shape_export(monkeypatch):
    """Within the test the layers run as in an export of fixed shapes (eagerly: compared in float64)."""
    monkeypatch.setattr(fixed_shapes, 'is_exporting', lambda: True)
    with fixed_shapes.fixed_shape_export():
        yield


def set_budget(monkeypatch, logits_bytes: int) -> None:
    """Runs of at most ``logits_bytes`` of logits, whatever the queries' size."""
    monkeypatch.setattr(attention_module, 'EXPORT_LOGITS_BYTES', logits_bytes)
    monkeypatch.setattr(attention_module, 'LOGITS_OVER_QUERIES', 0)


def count_calls(monkeypatch, module, name: str) -> list:
    """Record each call of ``module.name`` (still made) in the list returned."""
    calls, function = [], getattr(module, name)

    def recorded(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    monkeypatch.setattr(module, name, recorded)
    return calls


#: q (2, 1, 10, 8) against k (1, 3, 5, 8): float32 logits (2, 3, 10, 5), 1200 bytes; slices of the
#: images 600 bytes, of the heads 400, of the queries 120.
@pytest.mark.parametrize('budget,leading,runs', [
    (1200, None, (-2, 10)),  # within the budget: one pass
    (1199, None, (-4, 1)), (600, None, (-4, 1)),  # an image a run
    (599, None, (-3, 1)), (400, None, (-3, 1)),  # a head a run (of both images)
    (399, None, (-2, 3)),  # 3 queries: 360 bytes, in 4 runs of 3, 3, 3 and 1
    (250, None, (-2, 2)), (10, None, (-2, 1)),  # at least one query a run
    (400, 1, (-2, 3)),  # the heads may not be split
    (400, 0, (-2, 3))])
def test_attention_runs_split_the_first_leading_dim_that_fits_else_the_queries(budget, leading, runs):
    q, k = torch.empty(2, 1, 10, 8), torch.empty(1, 3, 5, 8)
    assert attention_runs(q, k, leading, budget) == runs


def test_attention_runs_default_to_the_export_budget_or_four_times_the_queries():
    def runs(queries: int, keys: int, heads: int, dims: int):
        return attention_runs(torch.empty(1, heads, queries, dims, device='meta'),
                              torch.empty(1, heads, keys, dims, device='meta'))

    assert runs(300, 300, 4, 16) == (-2, 300)  # 1.4 MB of logits: one pass
    # 144 MB of logits; 16 MiB runs (more than 4 x 0.8 MB of queries): 9 runs of queries (a head is 36 MB)
    assert runs(3000, 3000, 4, 16) == (-2, 334)
    # 216 MB of logits, 15.4 MB of queries: 4 runs of 54 MB
    assert runs(60000, 900, 1, 64) == (-2, 15000)


#: q, k and v (2, 3, 4, 10, 8), float64: logits of 19200 bytes; slices of the first dim 9600 bytes, of
#: the second 6400, of the third 4800, of the queries 1920.
@pytest.mark.parametrize('budget,runs', [(19200, [(2, 3, 4, 10)]),
                                         (9600, [(1, 3, 4, 10)] * 2),
                                         (6400, [(2, 1, 4, 10)] * 3),
                                         (4800, [(2, 3, 1, 10)] * 4),
                                         (4799, [(2, 3, 4, 2)] * 5)],
                         ids=['one-pass', 'images', 'rows', 'heads', 'queries'])
@pytest.mark.parametrize('mask_rows', [10, 1, None], ids=['per-query-mask', 'broadcast-mask', 'no-mask'])
@pytest.mark.parametrize('keys_broadcast', [False, True], ids=['keys', 'keys-of-one-image'])
def test_plain_attention_in_runs_equals_one_pass(fixed_shape_export, monkeypatch, budget, runs, mask_rows,
                                                 keys_broadcast):
    """RMT's export form: 5-D operands, its log-decay mask (1, n, L, L) broadcast over the leading dims."""
    q, k, v = randn(2, 3, 4, 10, 8, seed=0), randn(2, 3, 4, 10, 8, seed=1), randn(2, 3, 4, 10, 8, seed=2)
    if keys_broadcast:
        k, v = k[:1], v[:1]
    mask = None if mask_rows is None else randn(1, 4, mask_rows, 10, seed=3)
    expected = plain_attention(q, k, v, mask, 0.3)  # within the default budget: one pass
    set_budget(monkeypatch, budget)
    calls = count_calls(monkeypatch, layers_attention, 'attend')
    actual = plain_attention(q, k, v, mask, 0.3, fixed_shape_runs(q, k))
    assert [torch.broadcast_shapes(call[0].shape[:-1], call[1].shape[:-2] + (1, )) for call in calls] == runs
    # each output row is the same computation on the same rows: 8-term products, the softmax, (.) v over 10
    assert_close(actual, expected, two_implementations(torch.float64, 10, 3))


def test_attention_runs_only_in_exports_of_fixed_shapes(monkeypatch):
    q = randn(1, 2, 10, 8)
    set_budget(monkeypatch, 1)
    assert fixed_shape_runs(q, q) is None  # eager
    with fixed_shapes.fixed_shape_export():
        assert fixed_shape_runs(q, q) is None  # not exporting: the context alone does not split
    monkeypatch.setattr(fixed_shapes, 'is_exporting', lambda: True)
    assert fixed_shape_runs(q, q) is None  # exporting, but a graph that takes any size
    with fixed_shapes.fixed_shape_export():
        assert fixed_shape_runs(q, q) == (-2, 1)  # a query a run


def upstream_mixed_head_attention(q, k, v, conv: nn.Conv2d, scale: float) -> torch.Tensor:
    """The spec's ops (upstream ResT): scores mixed over heads, softmax, instance norm of each map, (.) v."""
    attention = F.instance_norm(conv(torch.matmul(q, k.transpose(-1, -2)) * scale).softmax(dim=-1))
    return torch.matmul(attention, v)


#: q (2, 4, 30, 8) against k (2, 4, 12, 8), float64: 23040 bytes of logits, 11520 an image, 768 a query.
@pytest.mark.parametrize('budget,runs', [(23040, [(2, 30)]), (11520, [(1, 30)] * 2), (11519, [(2, 10)] * 3),
                                         (5000, [(2, 6)] * 5)],
                         ids=['one-pass', 'images', 'queries', 'fewer-queries'])
def test_rest_mixed_head_export_attention_equals_upstream(fixed_shape_export, monkeypatch, budget, runs):
    """ResT's export form of its mixed heads: the instance norm's statistics span each image's whole
    (N, N') map; in runs of queries each run's squared deviations are summed and the norm scales the
    concatenated output; the heads, mixed, are never split."""
    heads, length, keys = 4, 30, 12
    q, k, v = randn(2, heads, length, 8, seed=0), randn(2, heads, keys, 8, seed=1), randn(2, heads, keys, 8, seed=2)
    attention = ExportEfficientMultiHeadAttention(heads * 8, heads, sr_ratio=1).double()
    conv = attention.transform_conv
    with torch.no_grad():
        conv.weight.copy_(randn(heads, heads, 1, 1, seed=3))
        expected = upstream_mixed_head_attention(q, k, v, conv, attention.scale)
        set_budget(monkeypatch, budget)
        calls = []
        conv.register_forward_hook(lambda module, inputs, output: calls.append((len(output), output.shape[-2])))
        actual = attention.graph_attend(*(t.transpose(1, 2) for t in (q, k, v))).transpose(1, 2)
    assert calls == runs
    # the map's mean and variance sum all N N' terms; then the softmax and (.) v: 4 steps
    assert_close(actual, expected, two_implementations(torch.float64, length * keys, 4))
