"""A FLOP count traces the backbones in their traced forms: plain torch ops only (no autograd Function,
which a counter cannot look into), one graph for any batch, the eager function."""
import copy

import pytest
import torch
from mmdet.registry import MODELS

from mmrmt.deployment.export import TRACED_FORMS, traced_implementation
from helpers.backbones import REST_TINY, RMT_TINY
from helpers.rounding import assert_within_low_precision

#: Decomposed and full MaSA (short sequences: eager inference attends them with GEMMs); ResT's single head
#: and mixed heads (eagerly an autograd Function); RMT's FlexAttention form traces as the fast one.
BACKBONES = {'rmt': dict(type='RMT', arch=RMT_TINY), 'rmt-flex': dict(type='RMT', arch=RMT_TINY, impl='flex'),
             'rest': dict(type='ResT', arch=REST_TINY)}


@pytest.mark.parametrize('name', list(BACKBONES))
def test_a_traced_form_is_plain_ops_for_any_batch(name):
    torch.manual_seed(0)
    backbone = MODELS.build(BACKBONES[name]).eval()
    with torch.no_grad():
        with traced_implementation(backbone):
            traced = torch.jit.trace(backbone, torch.randn(3, 3, 64, 80), check_trace=False)
        assert not [node for node in traced.inlined_graph.nodes() if node.kind() == 'prim::PythonOp']
        x = torch.randn(2, 3, 64, 80)
        exact = copy.deepcopy(backbone).double()(x.double())
        assert_within_low_precision(traced(x), backbone(x), exact, torch.float32, [1] * len(exact))
    assert not any(type(module) in TRACED_FORMS.values() for module in backbone.modules()), 'the eager classes back'
