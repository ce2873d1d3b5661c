"""What every mmrmt backbone (RMT, ResT, ResMLP) promises alike.

Registration in mmdet's and mmseg's MODELS, a one-line error naming the
argument and the values allowed for every bad constructor argument, input
checks, out_indices / frozen_stages ranges, output sizes, gradients,
norm_eval, with_cp, and strict loading. Each backbone's own behaviour is
tested in its own file.
"""
import contextlib
import inspect
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Iterator, Tuple, Type

import pytest
import torch
from torch import nn

from mmrmt.models import RMT, ResMLP, ResT
from mmrmt.models.backbones.base_backbone import PyramidBackbone
from helpers.backbone_checks import assert_norm_eval_keeps_batch_norms_in_eval, assert_with_cp_matches_plain
from helpers.backbones import RESMLP_TINY, REST_TINY, RMT_TINY
from helpers.checkpoints import pretrained, save


@dataclass(frozen=True)
class Case:
    """One backbone as the contract tests drive it.

    Args:
        backbone (type): The backbone class.
        arch (dict): A small custom arch of it.
        channels (tuple[int]): Channels of its four outputs.
        other_arch (dict): Another variant, whose checkpoints must not load.
        other_error (str): Regex of what the loader says about them.
    """
    backbone: Type[nn.Module]
    arch: dict
    channels: Tuple[int, ...]
    other_arch: dict
    other_error: str

    @property
    def name(self) -> str:
        return self.backbone.__name__

    def build(self, **kwargs) -> nn.Module:
        return self.backbone(self.arch, **kwargs)

    def out_kwargs(self, out_indices) -> dict:
        """Arguments emitting ``out_indices`` (ResMLP: as many of the last levels)."""
        if self.backbone is not ResMLP or not isinstance(out_indices, tuple) or not out_indices:
            return dict(out_indices=out_indices)
        return dict(out_indices=out_indices, out_levels=(0, 1, 2, 3)[-len(out_indices):])


CASES = [
    Case(RMT, RMT_TINY, (16, 32, 48, 64), {**RMT_TINY, 'depths': [1, 2, 2, 1]},
         r'unexpected keys \(layers\.2\.blocks\.1\.'),
    Case(ResT, REST_TINY, (16, 32, 48, 64), {**REST_TINY, 'depths': [1, 1, 3, 1]},
         r'unexpected keys \(stage3\.2\.'),
    Case(ResMLP, RESMLP_TINY, (16, 16, 16, 16), {**RESMLP_TINY, 'embed_dims': 24},
         r'differ in shape \(stem\.proj\.weight: file \(24, 3, 16, 16\) vs model \(16, 3, 16, 16\)'),
]
BY_NAME = {case.name: case for case in CASES}
each_backbone = pytest.mark.parametrize('case', CASES, ids=lambda case: case.name)


@contextlib.contextmanager
def raises_one_line(error: Type[Exception], pattern: str) -> Iterator[pytest.ExceptionInfo]:
    """``pytest.raises`` that also checks the message is a single line."""
    with pytest.raises(error, match=pattern) as info:
        yield info
    assert '\n' not in str(info.value), str(info.value)


# --- registries ---------------------------------------------------------------------------------
@each_backbone
@pytest.mark.parametrize('scope', ['mmdet', 'mmseg'])
def test_registered_in_mmdet_and_mmseg_models(case, scope):
    registry = __import__(f'{scope}.registry', fromlist=['MODELS']).MODELS
    assert isinstance(registry.build(dict(type=case.name, arch=case.arch)), case.backbone)


@pytest.mark.slow  # a fresh process
def test_custom_imports_config_builds_every_backbone_in_a_fresh_process(tmp_path):
    config = tmp_path / 'backbones.py'
    config.write_text("custom_imports = dict(imports=['mmrmt'], allow_failed_imports=False)\n"
                      + ''.join(f'{case.name.lower()} = dict(type={case.name!r}, arch={case.arch!r})\n'
                                for case in CASES))
    script = ('import sys; from mmengine import Config; '
              'assert "mmrmt" not in sys.modules; '
              'cfg = Config.fromfile(sys.argv[1]); '
              'from mmdet.registry import MODELS as D; from mmseg.registry import MODELS as S; '
              f'print(*[type(r.build(cfg[n])).__name__ for n in {[c.name.lower() for c in CASES]!r} for r in (D, S)])')
    result = subprocess.run([sys.executable, '-c', script, str(config)], capture_output=True,
                            text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-6:] == ['RMT', 'RMT', 'ResT', 'ResT', 'ResMLP', 'ResMLP']


def test_registry_build_keeps_the_error_on_one_line():
    from mmdet.registry import MODELS
    with raises_one_line(ValueError, r"RMT: arch\['depths'\]\[1\] must be an int >= 0, got -1"):
        MODELS.build(dict(type='RMT', arch={**RMT_TINY, 'depths': [1, -1, 1, 1]}))


# --- constructor arguments shared by all ---------------------------------------------------------
COMMON_ARGUMENT_ERRORS = [
    (dict(in_channels=0), ValueError, r'in_channels must be an int >= 1, got 0'),
    (dict(in_channels=3.0), TypeError, r'in_channels must be an int >= 1, got 3\.0 \(float\)'),
    (dict(in_channels=True), TypeError, r'in_channels must be an int >= 1, got True \(bool\)'),
    (dict(drop_path_rate=1.5), ValueError, r'drop_path_rate must be a number in \[0, 1\), got 1\.5'),
    (dict(drop_path_rate=-0.1), ValueError, r'drop_path_rate must be a number in \[0, 1\), got -0\.1'),
    (dict(drop_path_rate=1.0), ValueError, r'drop_path_rate must be a number in \[0, 1\)'),
    (dict(drop_path_rate='0.1'), TypeError, r"drop_path_rate must be a number in \[0, 1\), got '0\.1' \(str\)"),
    (dict(frozen_stages=1.5), TypeError,
     r'frozen_stages must be an int in \[-1, 4\] \(-1: none, 0: the stem.*got 1\.5'),
    (dict(frozen_stages=True), TypeError, r'frozen_stages must be an int in \[-1, 4\].*got True \(bool\)'),
    (dict(frozen_stages=5), ValueError, r'frozen_stages must be an int in \[-1, 4\].*got 5'),
    (dict(frozen_stages=-2), ValueError, r'frozen_stages must be an int in \[-1, 4\].*got -2'),
    (dict(norm_eval='yes'), TypeError, r"norm_eval must be True or False, got 'yes'"),
    (dict(with_cp=1), TypeError, r'with_cp must be True or False, got 1 \(int\)'),
    (dict(norm_cfg='BN'), TypeError, r"norm_cfg must be a dict with a 'type', e\.g\. dict\(type='BN'\).*got 'BN'"),
    (dict(norm_cfg=dict(requires_grad=True)), TypeError, r"norm_cfg must be a dict with a 'type'"),
    (dict(init_cfg=dict(type='Pretrained')), ValueError,
     r"init_cfg must be None or dict\(type='Pretrained', checkpoint=PATH_OR_URL\).*got \{'type': 'Pretrained'\}"),
    (dict(init_cfg=dict(type='Pretrained', checkpoint='')), ValueError, r'init_cfg must be None or dict'),
    (dict(init_cfg=dict(type='Pretrained', checkpoint=3)), ValueError, r'init_cfg must be None or dict'),
    (dict(init_cfg=dict(type='Pretrained', checkpoint='a.pth', prefix=1)), ValueError,
     r'init_cfg must be None or dict.* with an optional prefix=STR'),
    (dict(init_cfg=dict(type='Pretrained', checkpoint='a.pth', map_location='cpu')), ValueError,
     r"init_cfg must be None or dict.*\(keys \['type', 'checkpoint', 'prefix'\]\), got .*map_location"),
    (dict(init_cfg=dict(type='Kaiming')), ValueError, r"init_cfg must be None or dict\(type='Pretrained'"),
    (dict(init_cfg=[dict(type='Pretrained', checkpoint='a.pth')]), ValueError, r'init_cfg must be None or dict'),
]


@each_backbone
@pytest.mark.parametrize('kwargs,error,message', COMMON_ARGUMENT_ERRORS,
                         ids=[str(kwargs) for kwargs, _, _ in COMMON_ARGUMENT_ERRORS])
def test_invalid_common_argument_fails_naming_it_and_the_allowed_values(case, kwargs, error, message):
    with raises_one_line(error, f'^{case.name}: {message}'):
        case.build(**kwargs)


#: The keyword-only options every backbone takes, as :class:`PyramidBackbone` declares them.
SHARED_OPTIONS = [parameter for parameter in inspect.signature(PyramidBackbone.__init__).parameters.values()
                  if parameter.kind is parameter.KEYWORD_ONLY]


def test_the_shared_options_are_the_arguments_every_backbone_takes_alike():
    assert [parameter.name for parameter in SHARED_OPTIONS] == [
        'in_channels', 'frozen_stages', 'norm_eval', 'norm_cfg', 'with_cp', 'init_cfg', 'pretrained']


@each_backbone
def test_signature_shows_the_shared_options_with_their_types_and_defaults(case):
    parameters = list(inspect.signature(case.backbone).parameters.values())
    assert parameters[-len(SHARED_OPTIONS):] == SHARED_OPTIONS
    assert all(parameter.annotation is not parameter.empty for parameter in parameters)
    assert not any(parameter.kind is parameter.VAR_KEYWORD for parameter in parameters)


@each_backbone
@pytest.mark.parametrize('kwargs,message', [
    (dict(frozen_stage=1), r"got an unexpected keyword argument 'frozen_stage' \(did you mean 'frozen_stages'\?\)$"),
    (dict(init_cgf=None), r"got an unexpected keyword argument 'init_cgf' \(did you mean 'init_cfg'\?\)$"),
    (dict(colour=True), r"got an unexpected keyword argument 'colour'$"),
], ids=str)
def test_misspelt_argument_fails_naming_the_backbone_and_the_nearest_argument(case, kwargs, message):
    with raises_one_line(TypeError, f'^{case.name}: {message}'):
        case.build(**kwargs)


@each_backbone
def test_too_many_positional_arguments_fail_naming_the_backbone(case):
    with raises_one_line(TypeError, f'^{case.name}: too many positional arguments$'):
        case.backbone(*[None] * 7)


@each_backbone
@pytest.mark.parametrize('out_indices', [(0, 4), (5, ), (1, 1), (3, -1), (0.5, ), ('0', ), (True, ), ()],
                         ids=str)
def test_out_indices_out_of_range_or_repeated_fail(case, out_indices):
    with raises_one_line(ValueError, rf'^{case.name}: out_indices must (be distinct stage indices in '
                                     r'\[0, 3\]|name one block for each of the out_levels)'):
        case.build(**case.out_kwargs(out_indices))


@each_backbone
def test_negative_out_indices_count_from_the_end(case):
    model = case.build(**case.out_kwargs((-3, -1)))
    assert model.out_indices == (1, 3)


@each_backbone
@pytest.mark.parametrize('frozen_stages', [-1, 0, 2, 3])
def test_frozen_parameters_get_no_gradient_and_the_rest_do(case, frozen_stages):
    model = case.build(frozen_stages=frozen_stages, drop_path_rate=0.).train()
    frozen = {name for name, param in model.named_parameters() if not param.requires_grad}
    assert bool(frozen) == (frozen_stages >= 0)
    outputs = model(torch.randn(2, 3, 64, 64))
    sum(out.square().mean() for out in outputs).backward()
    for name, param in model.named_parameters():
        assert (param.grad is None) == (name in frozen), name


# --- constructor arguments of one backbone -------------------------------------------------------
def rmt_arch(**change) -> dict:
    return dict(arch={**RMT_TINY, **change})


def rest_arch(**change) -> dict:
    return dict(arch={**REST_TINY, **change})


def resmlp_arch(**change) -> dict:
    return dict(arch={**RESMLP_TINY, **change})


OWN_ARGUMENT_ERRORS = [
    ('RMT', rmt_arch(depths=[1, -1, 1, 1]), ValueError, r"arch\['depths'\]\[1\] must be an int >= 0, got -1"),
    ('RMT', rmt_arch(depths=[1, 1.5, 1, 1]), TypeError, r"arch\['depths'\]\[1\] must be an int >= 0, got 1\.5"),
    ('RMT', rmt_arch(embed_dims=[0, 32, 48, 64]), ValueError, r"arch\['embed_dims'\]\[0\] must be an int >= 1"),
    ('RMT', rmt_arch(num_heads=[2, 0, 4, 4]), ValueError, r"arch\['num_heads'\]\[1\] must be an int >= 1, got 0"),
    ('RMT', rmt_arch(mlp_ratios=[2, 2, -1, 2]), ValueError, r"arch\['mlp_ratios'\]\[2\] must be a finite number > 0"),
    ('RMT', rmt_arch(init_values=[2, 0, 2, 2]), ValueError, r"arch\['init_values'\]\[1\] must be a finite number > 0"),
    ('RMT', rmt_arch(heads_ranges=[4, 4, -6, 6]), ValueError,
     r"arch\['heads_ranges'\]\[2\] must be a finite number >= 0"),
    ('RMT', rmt_arch(decomposed=[1, 1, 0, 0]), TypeError, r"arch\['decomposed'\]\[0\] must be True or False, got 1"),
    ('RMT', rmt_arch(layer_scales=[False, False, True, 'yes']), TypeError,
     r"arch\['layer_scales'\]\[3\] must be True or False"),
    ('RMT', rmt_arch(layer_scale_init=-1e-6), ValueError, r"arch\['layer_scale_init'\] must be a finite number > 0"),
    ('RMT', rmt_arch(depths=[1, 1, 1]), ValueError,
     r"the per-stage lists of arch must have the same length, got \{'embed_dims': 4, 'depths': 3"),
    ('RMT', rmt_arch(depths=[]), TypeError, r"arch\['depths'\] must be a non-empty list with one entry per stage"),
    ('RMT', rmt_arch(mlp_ratios=2), TypeError, r"arch\['mlp_ratios'\] must be a non-empty list"),
    ('RMT', rmt_arch(windows=2), KeyError,
     r"a custom arch needs the keys \['embed_dims', .*'layer_scales'\] and may "
     r"have \['layer_scale_init'\]; missing \[\], unknown \['windows'\]"),
    ('RMT', dict(arch={k: v for k, v in RMT_TINY.items() if k != 'heads_ranges'}), KeyError,
     r"a custom arch needs the keys \[.*\] and may have \['layer_scale_init'\]; missing \['heads_ranges'\]"),
    ('RMT', dict(arch='xl'), KeyError, r"unknown arch 'xl'; choose one of \['b', 'base', 'l', 'large', 's', "
                                       r"'small', 't', 'tiny'\] or pass a dict with the keys \['embed_dims'"),
    ('RMT', dict(arch=3), TypeError, r'arch must be a variant name or a dict, got int'),
    ('RMT', rmt_arch(embed_dims=[16, 30, 48, 64], num_heads=[2, 4, 4, 4]), ValueError,
     r'embed_dims\[1\]=30 is not divisible by num_heads\[1\]=4'),
    ('RMT', rmt_arch(embed_dims=[16, 32, 48, 60]), ValueError,
     r'the head dimension embed_dims\[3\] / num_heads\[3\] = 15 is odd'),
    ('RMT', dict(arch=RMT_TINY, impl='flash'), ValueError, r"impl must be one of \('fast', 'flex', 'reference'\)"),
    ('ResT', dict(arch=REST_TINY, impl='flash'), ValueError,
     r"impl must be 'fast' \(lean attention and MLP\) or 'reference' \(the spec's computation step by step\), "
     r"got 'flash'"),
    ('ResT', dict(arch=REST_TINY, impl=None), TypeError, r"impl must be 'fast' .*, got None \(NoneType\)"),
    ('ResT', rest_arch(depths=[1, -1, 2, 1]), ValueError, r"arch\['depths'\]\[1\] must be an int >= 0, got -1"),
    ('ResT', rest_arch(embed_dims=[1, 32, 48, 64]), ValueError,
     r"arch\['embed_dims'\]\[0\] must be an int >= 2 \(the stem's hidden convs have half\), got 1"),
    ('ResT', rest_arch(sr_ratios=[8, 4, 0, 1]), ValueError, r"arch\['sr_ratios'\]\[2\] must be an int >= 1, got 0"),
    ('ResT', rest_arch(sr_ratios=[8, 4, 1.5, 1]), TypeError, r"arch\['sr_ratios'\]\[2\] must be an int >= 1"),
    ('ResT', rest_arch(num_heads=[1, 2, 2, -4]), ValueError, r"arch\['num_heads'\]\[3\] must be an int >= 1"),
    ('ResT', rest_arch(mlp_ratios=[2, 2, 0, 2]), ValueError, r"arch\['mlp_ratios'\]\[2\] must be a finite number > 0"),
    ('ResT', rest_arch(drop_path_rate=2), ValueError, r"arch\['drop_path_rate'\] must be a number in \[0, 1\)"),
    ('ResT', rest_arch(depths=[1, 1, 1]), ValueError,
     r"the per-stage lists of arch must have the same length, got \{'embed_dims': 4, 'depths': 3"),
    ('ResT', rest_arch(mlp_ratios=4), TypeError, r"arch\['mlp_ratios'\] must be a non-empty list"),
    ('ResT', rest_arch(embed_dims=[16, 30, 48, 64], num_heads=[1, 4, 2, 4]), ValueError,
     r'embed_dims\[1\]=30 is not divisible by num_heads\[1\]=4'),
    ('ResT', dict(arch={k: v for k, v in REST_TINY.items() if k != 'sr_ratios'}), KeyError,
     r"a custom arch needs the keys \[.*\] and may have \['drop_path_rate'\]; missing \['sr_ratios'\], unknown \[\]"),
    ('ResT', dict(arch='tiny'), KeyError, r"unknown arch 'tiny'; choose one of \['base', 'large', 'lite', 'small'\]"),
    ('ResMLP', resmlp_arch(depth=0), ValueError, r"arch\['depth'\] must be an int >= 1, got 0"),
    ('ResMLP', resmlp_arch(embed_dims=-16), ValueError, r"arch\['embed_dims'\] must be an int >= 1"),
    ('ResMLP', resmlp_arch(patch_size=12), ValueError,
     r"arch\['patch_size'\] must be a power of two \(1, 2, 4, 8, \.\.\.\), got 12"),
    ('ResMLP', resmlp_arch(window_size=0), ValueError, r"arch\['window_size'\] must be an int >= 1, got 0"),
    ('ResMLP', dict(arch={'embed_dims': 16, 'depth': 4, 'patch_size': 512}), ValueError,
     r"arch\['window_size'\] \(by default 224 // patch_size, the pretraining grid\) must be an int >= 1, got 0"),
    ('ResMLP', resmlp_arch(mlp_ratio=float('inf')), ValueError, r"arch\['mlp_ratio'\] must be a finite number > 0"),
    ('ResMLP', resmlp_arch(windows=3), KeyError,
     r"a custom arch needs the keys \['embed_dims', 'depth', 'patch_size'\] and may have "
     r"\['mlp_ratio', 'layer_scale_init', 'window_size'\]; missing \[\], unknown \['windows'\]"),
    ('ResMLP', dict(arch={'embed_dims': 8, 'depth': 4}), KeyError,
     r"a custom arch needs the keys .* missing \['patch_size'\]"),
    ('ResMLP', dict(arch='48'), KeyError, r"unknown arch '48'; choose one of .* or pass a dict with the keys "
                                          r"\['embed_dims', 'depth', 'patch_size'\]"),
    ('ResMLP', dict(arch=RESMLP_TINY, shift_windows='yes'), TypeError, r"shift_windows must be True or False"),
    ('ResMLP', dict(arch=RESMLP_TINY, out_levels=(0, 4)), ValueError,
     r'out_levels must be ascending distinct pyramid levels among \(0, 1, 2, 3\)'),
    ('ResMLP', dict(arch=RESMLP_TINY, out_levels=(2, 1)), ValueError, r'out_levels must be ascending'),
    ('ResMLP', dict(arch=RESMLP_TINY, out_levels=3), ValueError, r'out_levels must be ascending.*got 3'),
    ('ResMLP', dict(arch=RESMLP_TINY, out_indices=(0, 1, 2)), ValueError,
     r'out_indices must name one block for each of the out_levels \(0, 1, 2, 3\)'),
    ('ResMLP', dict(arch=RESMLP_TINY, out_indices=(3, 2, 1, 0)), ValueError,
     r'out_indices must be ascending \(the block of each level of out_levels, in order\), got \(3, 2, 1, 0\)'),
]


@pytest.mark.parametrize('name,kwargs,error,message', OWN_ARGUMENT_ERRORS,
                         ids=[f'{name}-{kwargs}'[:90] for name, kwargs, _, _ in OWN_ARGUMENT_ERRORS])
def test_invalid_backbone_argument_fails_naming_it_and_the_allowed_values(name, kwargs, error, message):
    with raises_one_line(error, f'{name}: {message}'):
        BY_NAME[name].backbone(**kwargs)


# --- inputs ---------------------------------------------------------------------------------------
@each_backbone
def test_input_with_wrong_channel_count(case):
    with raises_one_line(ValueError, rf'^{case.name} expects \(B, 3, H, W\) inputs \(in_channels=3\), '
                                     r'got \(1, 1, 32, 32\)'):
        case.build()(torch.randn(1, 1, 32, 32))
    with raises_one_line(ValueError, r'got \(3, 32, 32\)'):
        case.build()(torch.randn(3, 32, 32))
    assert case.build(in_channels=1).eval()(torch.randn(1, 1, 32, 32))[0].shape == (1, case.channels[0], 8, 8)


@each_backbone
@pytest.mark.parametrize('dtype', [torch.uint8, torch.int64, torch.bool])
def test_integer_input_fails_naming_the_dtype_and_the_fix(case, dtype):
    with raises_one_line(TypeError, rf'^{case.name}: the input dtype {dtype} is not floating point; convert the '
                                    r'images first, e.g\. x\.float\(\)'):
        case.build()(torch.zeros(1, 3, 32, 32, dtype=dtype))


@each_backbone
def test_input_of_another_float_dtype_fails_naming_both(case):
    with raises_one_line(TypeError, rf'^{case.name}: the input dtype torch\.float32 differs from the model dtype '
                                    r'torch\.float64; convert one to the other \(x\.to\(torch\.float64\) or '
                                    r'model\.to\(torch\.float32\)\)'):
        case.build().double()(torch.randn(1, 3, 32, 32))
    with raises_one_line(TypeError, r'input dtype torch\.float64 differs from the model dtype torch\.float32'):
        case.build()(torch.randn(1, 3, 32, 32, dtype=torch.float64))
    model = case.build().double().eval()
    assert model(torch.randn(1, 3, 32, 32, dtype=torch.float64))[0].dtype == torch.float64


@each_backbone
def test_autocast_accepts_a_half_precision_input(case):
    model = case.build().eval()
    with torch.no_grad(), torch.autocast('cpu', dtype=torch.bfloat16):
        outputs = model(torch.randn(1, 3, 32, 32).bfloat16())
    assert all(torch.isfinite(out).all() for out in outputs)


@each_backbone
def test_input_on_another_device_fails_naming_both(case):
    with raises_one_line(ValueError, rf'^{case.name}: the input is on meta but the model on cpu; move one to the '
                                     r"other \(x\.to\('cpu'\)\)"):
        case.build()(torch.empty(1, 3, 32, 32, device='meta'))


@each_backbone
@pytest.mark.parametrize('mode', ['train', 'eval'])
@pytest.mark.parametrize('shape', [(0, 3, 32, 32), (1, 3, 0, 32), (2, 3, 32, 0)], ids=str)
def test_empty_input_is_refused_the_same_way_by_every_backbone(case, mode, shape):
    model = getattr(case.build(), mode)()
    state = {key: value.clone() for key, value in model.state_dict().items()}
    with raises_one_line(ValueError, rf'^{case.name}: the input {re.escape(str(shape))} is empty; pass at least '
                                     r'one image of at least 1x1 pixels'):
        model(torch.zeros(shape))
    assert all(torch.equal(state[key], value) for key, value in model.state_dict().items())


def test_non_tensor_input_fails():
    with raises_one_line(TypeError, r'^RMT expects a \(B, 3, H, W\) torch\.Tensor, got ndarray'):
        RMT(RMT_TINY)(torch.zeros(1, 3, 32, 32).numpy())


# --- outputs and gradients ------------------------------------------------------------------------
@each_backbone
@pytest.mark.parametrize('size', [(37, 53), (32, 32), (17, 9), (1, 1)], ids=str)
def test_any_input_size_gives_strides_4_to_32_with_ceil_sizes(case, size):
    model = case.build().eval()
    with torch.no_grad():
        outputs = model(torch.randn(2, 3, *size))
    expected = [(2, channels, -(-size[0] // stride), -(-size[1] // stride))
                for channels, stride in zip(case.channels, (4, 8, 16, 32))]
    assert [tuple(out.shape) for out in outputs] == expected
    assert all(out.is_contiguous() and torch.isfinite(out).all() for out in outputs)


@each_backbone
def test_batch_of_one_in_train_mode_gives_every_parameter_a_gradient(case):
    model = case.build(drop_path_rate=0.2).train()
    outputs = model(torch.randn(1, 3, 45, 61))
    sum(out.mean() for out in outputs).backward()
    assert [name for name, param in model.named_parameters() if param.grad is None] == []


@each_backbone
def test_norm_eval_keeps_batch_norms_in_eval_mode(case):
    assert_norm_eval_keeps_batch_norms_in_eval(lambda norm_eval: case.build(norm_eval=norm_eval))


@each_backbone
def test_with_cp_gives_same_outputs_and_gradients(case):
    assert_with_cp_matches_plain(lambda with_cp: case.build(drop_path_rate=0., with_cp=with_cp),
                                 torch.randn(2, 3, 48, 80))


# --- strict loading -------------------------------------------------------------------------------
@each_backbone
def test_checkpoint_of_another_variant_fails_naming_keys_and_loads_nothing(case, tmp_path):
    other = case.backbone(case.other_arch)
    path = save({'state_dict': other.state_dict()}, tmp_path / 'other.pth')
    model = case.build(init_cfg=pretrained(path))
    before = {key: value.clone() for key, value in model.state_dict().items()}
    with raises_one_line(ValueError, rf'other\.pth does not fit {case.name}: .*{case.other_error}'):
        model.init_weights()
    assert all(torch.equal(before[key], value) for key, value in model.state_dict().items())


@each_backbone
def test_detector_checkpoint_prefix_selects_the_backbone(case, tmp_path):
    source = case.build()
    path = save({'state_dict': {f'backbone.{k}': v for k, v in source.state_dict().items()}, 'meta': {}},
                tmp_path / 'detector.pth')
    model = case.build(init_cfg=pretrained(path, prefix='backbone.'))
    model.init_weights()
    assert all(torch.equal(value, model.state_dict()[key]) for key, value in source.state_dict().items())
