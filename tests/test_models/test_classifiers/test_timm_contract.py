"""What timm's own test suite (tests/test_models.py of pytorch-image-models) asserts of
every model, asserted of ours: registration, default_cfg, forward_features and
forward_head, reset_classifier, num_features, backward, forward_intermediates,
features_only and gradient checkpointing.

Our names match none of timm's exclusion filters (``EXCLUDE_JIT_FILTERS``,
``EXCLUDE_FX_FILTERS``), so its TorchScript and FX tests reach every one of
ours: neither can take them (docs/timm.md, "TorchScript and FX"), and each
refuses in one line naming what records them instead (a trace, checked here,
and torch.export: tests/test_models/test_plain_exports.py).
"""
import math

import pytest
import timm
import torch
from timm.data import resolve_data_config
from torchvision.models.feature_extraction import create_feature_extractor

import mmrmt  # noqa: F401  (registers the timm models)

#: One model of each family and head kind (the others differ in depth and width only).
MODELS = ('rmt_t', 'rmt_s_tl', 'rest_lite')
#: timm's sizes: forward at the default 224, backward and features at less.
BACKWARD_SIZE = (3, 128, 128)
FEATURE_SIZE = (3, 96, 96)


def test_every_variant_is_listed():
    assert timm.list_models('rmt*') == ['rmt_b', 'rmt_b_tl', 'rmt_l', 'rmt_l_tl', 'rmt_s', 'rmt_s_tl', 'rmt_t']
    assert timm.list_models('rest*') == ['rest_base', 'rest_large', 'rest_lite', 'rest_small']
    # Their weights have no download source (Baidu Pan): a cfg without one is not listed by list_pretrained.
    assert timm.models.get_pretrained_cfg('rmt_s_tl.in1k').classifier == ('head', 'aux_head')


@pytest.mark.parametrize('name, crop_pct, licence', [('rmt_s', 0.875, 'unknown'), ('rmt_l_tl', 0.875, 'unknown'),
                                                     ('rest_base', 1.0, 'apache-2.0')])
def test_the_pretrained_cfg_holds_the_authors_evaluation_settings(name, crop_pct, licence):
    model = timm.create_model(name)
    assert model.default_cfg is model.pretrained_cfg
    cfg = model.pretrained_cfg
    assert (cfg['input_size'], cfg['interpolation'], cfg['crop_pct'], cfg['license']) == (
        (3, 224, 224), 'bicubic', crop_pct, licence)
    assert resolve_data_config({}, model=model) == dict(input_size=(3, 224, 224), interpolation='bicubic',
                                                        mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                                                        crop_pct=crop_pct, crop_mode='center')


@pytest.mark.parametrize('name', MODELS)
def test_default_cfgs(name):
    """timm's test_model_default_cfgs."""
    model = timm.create_model(name).eval()
    assert model.num_classes == 1000 and model.num_features > 0 and model.head_hidden_size > 0
    cfg, state = model.default_cfg, model.state_dict()
    x = torch.randn(1, *cfg['input_size'])
    with torch.no_grad():
        features = model.forward_features(x)
        pre_logits = model.forward_head(features, pre_logits=True)
        assert features.shape[1:] == (model.num_features, *cfg['pool_size'])
        assert pre_logits.shape == (1, model.head_hidden_size)
        model.reset_classifier(0)
        assert model.num_classes == 0
        assert model(x).shape == pre_logits.shape
        model.reset_classifier(0, '')
        assert model(x).shape[2:] == cfg['pool_size'] and model(x).dim() == 4
        unpooled = timm.create_model(name, num_classes=0, global_pool='').eval()
        assert unpooled(x).shape[2:] == cfg['pool_size'] and unpooled(x).dim() == 4
    classifiers = cfg['classifier'] if isinstance(cfg['classifier'], tuple) else (cfg['classifier'], )
    assert all(f'{key}.weight' in state for key in (*classifiers, cfg['first_conv']))


@pytest.mark.parametrize('name', MODELS)
def test_backward_reaches_every_parameter(name):
    """timm's test_model_backward: a new 42-class head, every parameter gets a gradient."""
    model = timm.create_model(name, num_classes=42).train()
    outputs = model(torch.randn(2, *BACKWARD_SIZE))
    outputs.mean().backward()
    assert outputs.shape == (2, 42) and not outputs.isnan().any()
    missing = [key for key, param in model.named_parameters() if param.grad is None]
    assert not missing
    unpooled = model.forward_features(torch.randn(1, *BACKWARD_SIZE))
    assert unpooled.shape[1] == model.num_features


@pytest.mark.parametrize('name', MODELS)
def test_forward_intermediates_and_grad_checkpointing(name):
    """timm's test_model_forward_intermediates."""
    model = timm.create_model(name).eval()
    x = torch.randn(1, *FEATURE_SIZE)
    info = timm.models.FeatureInfo(model.feature_info, len(model.feature_info))
    with torch.no_grad():
        output, intermediates = model.forward_intermediates(x, output_fmt='NCHW')
        assert len(intermediates) == len(info.channels()) == 4
        for channels, reduction, out in zip(info.channels(), info.reduction(), intermediates):
            assert out.shape[:2] == (1, channels)
            assert all(size <= math.ceil(96 / reduction) + 1 for size in out.shape[2:])
        assert torch.equal(output, model.forward_features(x))
        nhwc = model.forward_intermediates(x, indices=2, output_fmt='NHWC', intermediates_only=True)
        assert [t.shape for t in nhwc] == [t.permute(0, 2, 3, 1).shape for t in intermediates[2:]]
    # Checkpointing acts in training (with autograd): there it must give the same outputs and gradients.
    model.train()
    for module in model.modules():  # BatchNorm on its running statistics, so that both runs see the same
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.eval()
    runs = []
    for checkpointing in (False, True):
        model.set_grad_checkpointing(checkpointing)
        image = x.clone().requires_grad_()
        output, _ = model.forward_intermediates(image)
        output.square().sum().backward()
        runs.append((output.detach(), image.grad))
    assert all(torch.equal(plain, checkpointed) for plain, checkpointed in zip(*runs))


@pytest.mark.parametrize('name', MODELS)
def test_features_only(name):
    """timm's test_model_forward_features: the four stages, strides 4-32."""
    model = timm.create_model(name, features_only=True).eval()
    assert model.feature_info.reduction() == [4, 8, 16, 32]
    with torch.no_grad():
        outputs = model(torch.randn(1, *FEATURE_SIZE))
    assert [out.shape[1] for out in outputs] == model.feature_info.channels()
    for reduction, out in zip(model.feature_info.reduction(), outputs):
        assert all(size <= math.ceil(96 / reduction) + 1 for size in out.shape[2:]) and not out.isnan().any()
    two = timm.create_model(name, features_only=True, out_indices=(1, 3))
    assert two.feature_info.reduction() == [8, 32]


@pytest.mark.parametrize('name', MODELS)
def test_a_trace_computes_the_eager_logits(name):
    model = timm.create_model(name).eval()
    x = torch.randn(1, *FEATURE_SIZE)
    with torch.no_grad():
        traced = torch.jit.trace(model, x, check_trace=False)
        torch.testing.assert_close(traced(x), model(x))


def test_bad_arguments_end_in_one_line():
    with pytest.raises(ValueError, match=r"^RMTClassifier: global_pool must be 'avg', or '' .*num_classes=0"):
        timm.create_model('rmt_t', global_pool='max')
    with pytest.raises(ValueError, match=r"^ResTClassifier: global_pool must be .*num_classes=1000\.$"):
        timm.create_model('rest_lite', global_pool='')
    with pytest.raises(ValueError, match=r'^RMTClassifier: norm=True needs a final norm'):
        timm.create_model('rmt_t').forward_intermediates(torch.randn(1, 3, 64, 64), norm=True)


#: Every registered name (test_every_variant_is_listed).
ALL_MODELS = ('rmt_t', 'rmt_s', 'rmt_b', 'rmt_l', 'rmt_s_tl', 'rmt_b_tl', 'rmt_l_tl', 'rest_lite', 'rest_small',
              'rest_base', 'rest_large')
#: What the one line names instead.
RECORD_INSTEAD = r'use torch\.export\.export\(model, \(x,\)\) or torch\.jit\.trace\(model, x\)'


def on_meta(name: str) -> torch.nn.Module:
    """The model ``name`` built without weights (refusals need none)."""
    with torch.device('meta'):
        return timm.create_model(name)


@pytest.mark.parametrize('name', ALL_MODELS)
def test_torchscript_refuses_in_one_line(name):
    """timm's test_model_forward_torchscript: ``torch.jit.script`` cannot compile the fast forms."""
    with pytest.raises(RuntimeError, match=f'cannot be compiled by torch.jit.script .*; {RECORD_INSTEAD}') as error:
        torch.jit.script(on_meta(name))
    assert '\n' not in str(error.value)


@pytest.mark.parametrize('trace', ['symbolic_trace', 'create_feature_extractor'])
@pytest.mark.parametrize('name', ALL_MODELS)
def test_fx_refuses_in_one_line(name, trace):
    """timm's test_model_forward_fx, backward_fx and fx_torchscript (torchvision's feature extractor, as
    timm's _create_fx_model) and a plain symbolic trace stop at the input check, in one line."""
    model = on_meta(name)
    with pytest.raises(TypeError, match=f'cannot be traced symbolically .*; {RECORD_INSTEAD}') as error:
        if trace == 'symbolic_trace':
            torch.fx.symbolic_trace(model)
        else:
            create_feature_extractor(model, return_nodes=['head'])
    assert '\n' not in str(error.value)
