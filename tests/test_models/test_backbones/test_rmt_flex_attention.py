"""RMT's FlexAttention form: compiled CPU inference computes what the reference computes, through
FlexAttention; everywhere it cannot run fused it is the fast form."""
import copy

import pytest
import torch

from mmrmt.models import RMT, ManhattanSelfAttention2d
from mmrmt.models.backbones.rmt import flex_attention
from mmrmt.models.backbones.rmt.attention import ManhattanSelfAttention
from mmrmt.models.backbones.rmt.fast_attention import FastManhattanSelfAttention
from mmrmt.models.backbones.rmt.fast_relative_position import FastManhattanRelPos
from mmrmt.models.backbones.rmt.flex_attention import FlexManhattanSelfAttention, flex_attention_runs
from mmrmt.models.layers import run_mode
from helpers.rounding import assert_within_low_precision

#: Both stage kinds, with and without layer scale, non-square grids at every stage.
TINY = dict(embed_dims=[32, 32, 48, 64], depths=[1, 1, 1, 1], num_heads=[2, 1, 3, 4],
            mlp_ratios=[2, 2, 2, 2], init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6],
            decomposed=[True, False, True, False], layer_scales=[False, False, True, True],
            layer_scale_init=0.5)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles afresh: no recompile limit carried over, no graph of another test reused."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def attended(monkeypatch) -> list:
    """The shapes of the q each FlexAttention call attends with, as the forward calls :func:`attend`."""
    shapes = []
    attend = flex_attention.attend

    def spy(q, *args):
        shapes.append(tuple(q.shape))
        return attend(q, *args)
    monkeypatch.setattr(flex_attention, 'attend', spy)
    return shapes


def attention_pair(decomposed: bool, embed_dims: int, num_heads: int):
    torch.manual_seed(0)
    flex = FlexManhattanSelfAttention(embed_dims, num_heads, decomposed).eval()
    for param in flex.parameters():  # random biases too, so every term matters
        torch.nn.init.normal_(param, std=0.3)
    reference = ManhattanSelfAttention(embed_dims, num_heads, decomposed)
    reference.load_state_dict(flex.state_dict())
    return flex, reference, FastManhattanRelPos(embed_dims, num_heads, 2, 4 if decomposed else 6)


def assert_compiled_flex_equals_reference(decomposed: bool, num_heads: int, grid: tuple, attended: list,
                                          through_flex: bool = True) -> None:
    """Compiled inference within float32's rounding of the reference's float64 result (given the
    reference's float32 error), attended through FlexAttention (unless not ``through_flex``, or under a
    kernel set it does not run under): once over all tokens, or along rows then columns."""
    height, width = grid
    flex, reference, relpos = attention_pair(decomposed, 16 * num_heads, num_heads)
    x = torch.randn(2, height, width, 16 * num_heads)
    with torch.no_grad():
        ours = torch.compile(flex, dynamic=False)(x, relpos)
        full = reference(x, relpos)
        exact = copy.deepcopy(reference).double()(x.double(), copy.deepcopy(relpos).double())
    assert_within_low_precision([ours], [full], [exact], torch.float32, [1])
    expected = ([(2 * num_heads, height, width, 16), (2 * num_heads, width, height, 16)] if decomposed
                else [(2, num_heads, height * width, 16)])
    assert attended == (expected if through_flex and flex_attention.CPU_KERNEL_SET_RUNS_FLEX else [])


@pytest.mark.parametrize('decomposed', [True, False], ids=['decomposed', 'full'])
def test_compiled_flex_attention_equals_reference(decomposed, attended):
    assert_compiled_flex_equals_reference(decomposed, 2, (5, 7), attended)


@pytest.mark.slow
@pytest.mark.parametrize('decomposed', [True, False], ids=['decomposed', 'full'])
@pytest.mark.parametrize('num_heads, grid', [(2, (1, 9)), (3, (4, 4)), (4, (11, 6)), (1, (3, 20))])
def test_compiled_flex_attention_equals_reference_at_any_size(decomposed, num_heads, grid, attended):
    assert_compiled_flex_equals_reference(decomposed, num_heads, grid, attended, decomposed or num_heads > 1)


@pytest.mark.slow
@pytest.mark.parametrize('decomposed, grid', [(False, (5, 7)), (True, (1, 9)), (True, (1, 1))])
def test_compiled_cpu_output_in_the_merged_layout_is_the_fast_form(decomposed, grid, attended):
    """One head, and a full stage or a single row or token: the output is already laid out as the
    heads are merged, where Inductor's C++ FlexAttention template raises on the fused sum."""
    assert_compiled_flex_equals_reference(decomposed, 1, grid, attended, through_flex=False)


@pytest.mark.parametrize('decomposed, num_heads, grid, device, attends', [
    (False, 1, (5, 7), 'cpu', False), (False, 2, (1, 1), 'cpu', False), (False, 2, (1, 2), 'cpu', True),
    (True, 1, (1, 9), 'cpu', False), (True, 2, (1, 1), 'cpu', False), (True, 1, (2, 9), 'cpu', True),
    (True, 2, (1, 9), 'cpu', True), (False, 1, (1, 1), 'cuda', True), (True, 1, (1, 9), 'cuda', True),
])
def test_attends_flex_unless_the_cpu_output_is_merged_already(monkeypatch, decomposed, num_heads, grid, device,
                                                              attends):
    monkeypatch.setattr(flex_attention, 'flex_attention_runs', lambda *args: True)
    flex = FlexManhattanSelfAttention(16 * num_heads, num_heads, decomposed)
    assert flex._attends_flex(device, torch.float32, *grid) is attends


@pytest.mark.slow
def test_compiled_flex_backbone_equals_reference(attended):
    """The whole backbone compiled with freezing, as the benchmark runs it; odd, non-square grids
    (12x18, 6x9, 3x5, 2x3); the second stage's single head of a full stage attends as the fast form."""
    torch.manual_seed(0)
    flex = RMT(TINY, drop_path_rate=0., impl='flex').eval()
    flex.init_weights()
    reference = RMT(TINY, drop_path_rate=0., impl='reference').eval()
    reference.load_state_dict(flex.state_dict())
    x = torch.randn(2, 3, 45, 71)
    with torch.no_grad():
        ours = torch.compile(flex, options=dict(freezing=True))(x)
        full = reference(x)
        exact = copy.deepcopy(reference).double()(x.double())
    assert_within_low_precision(ours, full, exact, torch.float32, [1] * len(exact))
    assert len(attended) == 5  # two passes in each decomposed stage, one in the last (stage 2's one head: fast)


@pytest.mark.parametrize('decomposed', [True, False], ids=['decomposed', 'full'])
@pytest.mark.parametrize('grad', [False, True], ids=['inference', 'autograd'])
def test_eager_cpu_is_the_fast_form(decomposed, grad, attended):
    """Run eagerly on the CPU (FlexAttention unfused there), with or without autograd: the fast
    form's very computation."""
    flex, _, relpos = attention_pair(decomposed, 32, 2)
    fast = FastManhattanSelfAttention(32, 2, decomposed).eval()
    fast.load_state_dict(flex.state_dict())
    x = torch.randn(2, 5, 7, 32)
    with torch.set_grad_enabled(grad):
        assert torch.equal(flex(x, relpos), fast(x, relpos))
    assert attended == []


@pytest.mark.parametrize('device, dtype, head_dims, compiling, grad, kernel_set, runs', [
    ('cpu', torch.float32, 16, True, False, True, True),  # compiled CPU inference
    ('cpu', torch.bfloat16, 16, True, False, True, True),
    ('cpu', torch.float32, 16, False, False, True, False),  # eager: FlexAttention unfused
    ('cpu', torch.float32, 16, True, True, True, False),  # no CPU backward
    ('cpu', torch.float64, 16, True, False, True, False),  # no float64 kernel
    ('cpu', torch.float32, 16, True, False, False, False),  # ATEN_CPU_CAPABILITY=default
    ('cpu', torch.float32, 8, True, False, True, True),  # any head on the CPU
    ('cuda', torch.float32, 16, False, True, True, True),  # eager, backward: compiled kernels
    ('cuda', torch.float16, 32, True, False, True, True),
    ('cuda', torch.float32, 8, True, False, True, False),  # Triton's dot needs 16 channels
    ('cuda', torch.float64, 16, True, False, True, False),
    ('meta', torch.float32, 16, True, False, True, False),
])
def test_where_flex_attention_runs(monkeypatch, device, dtype, head_dims, compiling, grad, kernel_set, runs):
    monkeypatch.setattr(torch.compiler, 'is_compiling', lambda: compiling)
    monkeypatch.setattr(flex_attention, 'CPU_KERNEL_SET_RUNS_FLEX', kernel_set)
    with torch.set_grad_enabled(grad):
        assert flex_attention_runs(device, dtype, head_dims) is runs


def test_never_while_a_graph_is_recorded(monkeypatch):
    monkeypatch.setattr(torch.compiler, 'is_compiling', lambda: True)
    monkeypatch.setattr(run_mode, 'records_graph', lambda: True)
    assert not flex_attention_runs('cuda', torch.float32, 16)
    assert not flex_attention_runs('cpu', torch.float32, 16)


def test_flex_is_selectable_with_the_fast_state_dict():
    """impl='flex' builds the fast form with the FlexAttention MaSA: the same parameters and buffers."""
    torch.manual_seed(0)
    flex, fast = RMT(TINY, impl='flex'), RMT(TINY)
    assert {type(m) for m in flex.modules() if isinstance(m, ManhattanSelfAttention)} == {FlexManhattanSelfAttention}
    assert flex.state_dict().keys() == fast.state_dict().keys()
    fast.load_state_dict(flex.state_dict())
    masa = ManhattanSelfAttention2d(32, num_heads=2, impl='flex')
    assert type(masa.attention) is FlexManhattanSelfAttention
