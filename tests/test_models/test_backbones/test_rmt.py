"""The RMT backbone: upstream exactness, checkpoint loading, sizes, freezing, errors."""
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import mmrmt  # noqa: F401  (registers the backbones)
from mmrmt.models.backbones import RMT
from backbone_checks import (assert_norm_eval_keeps_batch_norms_in_eval, assert_with_cp_matches_plain,
                             batch_norms)
from upstream_layouts import random_upstream_state_dict, upstream_param_count

ROOT = Path(__file__).parents[3]
TINY = dict(embed_dims=[16, 32, 48, 64], depths=[1, 2, 1, 1], num_heads=[2, 2, 4, 4],
            mlp_ratios=[2, 2, 2, 2], init_values=[2, 2, 2, 2], heads_ranges=[4, 4, 6, 6],
            decomposed=[True, True, False, False], layer_scales=[False, False, True, True])


def golden_arch(config: dict) -> dict:
    """Our arch dict for the upstream constructor arguments of a golden file."""
    return dict(embed_dims=config['embed_dims'], depths=config['depths'], num_heads=config['num_heads'],
                mlp_ratios=config['mlp_ratios'], init_values=config['init_values'],
                heads_ranges=config['heads_ranges'], decomposed=config['chunkwise_recurrents'],
                layer_scales=config['layerscales'], layer_scale_init=config['layer_init_values'])


def params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize('arch,expected', [('t', 12_783_776), ('s', 25_416_800),
                                           ('b', 52_604_680), ('l', 93_784_280)])
def test_parameter_counts_equal_upstream_detection_backbones(arch, expected):
    model = RMT(arch)
    assert params(model) == expected
    # ... which is the upstream classifier without its head plus four output norms.
    classifier_free = upstream_param_count(f'rmt-{arch}', without=RMT.dropped_checkpoint_prefixes)
    assert expected == classifier_free + 2 * sum(model.embed_dims)


def test_outputs_match_upstream_golden(data_dir):
    golden = torch.load(data_dir / 'rmt_tiny_seed0.pt')
    model = RMT(golden_arch(golden['config']), drop_path_rate=0.).eval()
    model.load_state_dict(golden['state_dict'], strict=True)
    with torch.no_grad():
        outputs = model(golden['input'])
    assert len(outputs) == len(golden['outputs']) == 4
    for ours, reference in zip(outputs, golden['outputs']):
        assert ours.shape == reference.shape
        assert (ours - reference).abs().max() < 1e-4


def test_arch_aliases_and_custom_dict():
    assert RMT('tiny').embed_dims == RMT('T').embed_dims == [64, 128, 256, 512]
    assert RMT(TINY).embed_dims == TINY['embed_dims']


@pytest.mark.parametrize('size', [(37, 53), (32, 32), (67, 93), (17, 9)])
def test_any_input_size_gives_ceil_based_outputs(size):
    model = RMT(TINY).eval()
    with torch.no_grad():
        outputs = model(torch.randn(2, 3, *size))
    # Every stride-2 conv rounds up: level i has ceil(ceil(H / 2) / 2 ...) rows.
    h, w = size
    for level, (out, channels) in enumerate(zip(outputs, TINY['embed_dims'])):
        for _ in range(2 if level == 0 else 1):
            h, w = -(-h // 2), -(-w // 2)
        assert out.shape == (2, channels, h, w)


def test_batch_one_in_train_mode_backpropagates():
    model = RMT(TINY, drop_path_rate=0.2).train()
    outputs = model(torch.randn(1, 3, 45, 61))
    sum(o.mean() for o in outputs).backward()
    assert all(p.grad is not None for p in model.parameters())


def test_out_indices_select_stages():
    model = RMT(TINY, out_indices=(1, 3)).eval()
    outputs = model(torch.randn(1, 3, 64, 64))
    assert [o.shape[1] for o in outputs] == [32, 64]
    assert sorted(model.extra_norms.keys()) == ['1', '3']


def _save(obj, path: Path) -> str:
    torch.save(obj, path)
    return str(path)


@pytest.mark.parametrize('wrap', ['model', 'state_dict', 'model_ema', 'module', 'bare'])
def test_upstream_imagenet_checkpoint_loads_with_only_new_norms_missing(tmp_path, wrap):
    upstream = random_upstream_state_dict('rmt-t')
    if wrap == 'module':
        content = {'model': {f'module.{k}': v for k, v in upstream.items()}}
    elif wrap == 'bare':
        content = upstream
    else:
        content = {wrap: upstream, 'epoch': 300}
    path = _save(content, tmp_path / 'rmt_t.pth')
    from mmengine.logging import MMLogger
    logger = MMLogger.get_current_instance()
    messages = []
    handler_cls = __import__('logging').Handler

    class Capture(handler_cls):
        def emit(self, record):
            messages.append(record.getMessage())

    handler = Capture()
    logger.addHandler(handler)
    try:
        model = RMT('t', init_cfg=dict(type='Pretrained', checkpoint=path))
        model.init_weights()
    finally:
        logger.removeHandler(handler)
    state = model.state_dict()
    for key, value in upstream.items():
        if key.startswith(RMT.dropped_checkpoint_prefixes):
            continue
        assert torch.equal(state[key], value), key
    summary = [m for m in messages if 'loaded' in m]
    assert len(summary) == 1
    for index in range(4):
        assert f'extra_norms.{index}.weight' in summary[0]
    assert 'head.weight' in summary[0] and 'proj.weight' in summary[0]
    assert 'layers.0' not in summary[0]


def test_checkpoint_of_another_variant_fails_and_loads_nothing(tmp_path):
    path = _save({'model': random_upstream_state_dict('rmt-s')}, tmp_path / 'rmt_s.pth')
    model = RMT('t', init_cfg=dict(type='Pretrained', checkpoint=path))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match=r'rmt_s\.pth does not fit RMT.*(differ in shape|unexpected)'):
        model.init_weights()
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before if 'Relpos' not in k)


def test_shape_mismatch_names_the_key_and_shapes(tmp_path):
    upstream = random_upstream_state_dict('rmt-t')
    upstream['layers.0.blocks.0.ffn.fc1.weight'] = torch.zeros(100, 64)
    path = _save({'model': upstream}, tmp_path / 'broken.pth')
    model = RMT('t', init_cfg=dict(type='Pretrained', checkpoint=path))
    with pytest.raises(ValueError, match=r'layers\.0\.blocks\.0\.ffn\.fc1\.weight: file \(100, 64\) '
                                         r'vs model \(192, 64\)'):
        model.init_weights()


def test_missing_and_foreign_files_fail_naming_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match='checkpoint not found: .*nowhere.pth'):
        RMT(TINY, init_cfg=dict(type='Pretrained', checkpoint=str(tmp_path / 'nowhere.pth'))).init_weights()
    text = tmp_path / 'notes.pth'
    text.write_text('not a checkpoint')
    with pytest.raises(ValueError, match='notes.pth is not a readable PyTorch checkpoint'):
        RMT(TINY, init_cfg=dict(type='Pretrained', checkpoint=str(text))).init_weights()
    tensor = _save(torch.zeros(3), tmp_path / 'tensor.pth')
    with pytest.raises(ValueError, match='tensor.pth holds a Tensor, not a state dict'):
        RMT(TINY, init_cfg=dict(type='Pretrained', checkpoint=tensor)).init_weights()


def test_detector_checkpoint_prefix_selects_the_backbone(tmp_path):
    source = RMT(TINY)
    path = _save({'state_dict': {f'backbone.{k}': v for k, v in source.state_dict().items()},
                  'meta': {}}, tmp_path / 'detector.pth')
    model = RMT(TINY, init_cfg=dict(type='Pretrained', checkpoint=path, prefix='backbone.'))
    model.init_weights()
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in source.state_dict().items())


def test_frozen_stages_stop_stem_and_first_stages():
    model = RMT(TINY, frozen_stages=2)
    model.train()
    frozen = [model.patch_embed, model.layers[0], model.layers[1], model.extra_norms['0'],
              model.extra_norms['1']]
    for module in frozen:
        assert all(not p.requires_grad for p in module.parameters())
        assert all(not bn.training for bn in batch_norms(module))
    for module in (model.layers[2], model.layers[3], model.extra_norms['2']):
        assert all(p.requires_grad for p in module.parameters())
    assert all(bn.training for bn in batch_norms(model.layers[2]))
    outputs = model(torch.randn(2, 3, 64, 64))
    sum(o.sum() for o in outputs).backward()
    assert all(p.grad is None for p in model.layers[0].parameters())
    assert all(p.grad is not None for p in model.layers[3].parameters())


def test_frozen_stem_only():
    model = RMT(TINY, frozen_stages=0).train()
    assert all(not p.requires_grad for p in model.patch_embed.parameters())
    assert all(p.requires_grad for p in model.layers[0].parameters())


def test_norm_eval_keeps_batch_norms_in_eval_mode():
    assert_norm_eval_keeps_batch_norms_in_eval(lambda norm_eval: RMT(TINY, norm_eval=norm_eval))


def test_with_cp_gives_same_outputs_and_gradients():
    assert_with_cp_matches_plain(lambda with_cp: RMT(TINY, drop_path_rate=0., with_cp=with_cp), torch.randn(2, 3, 48, 80))


@pytest.mark.parametrize('change,message', [
    (dict(depths=[1, 1, 1]), r'same length.*depths.: 3'),
    (dict(embed_dims=[16, 30, 48, 64], num_heads=[2, 4, 4, 4]),
     r'embed_dims\[1\]=30 is not divisible by num_heads\[1\]=4'),
    (dict(embed_dims=[16, 32, 48, 60]), r'head dimension embed_dims\[3\] / num_heads\[3\] = 15 is odd'),
])
def test_misconfigured_arch_fails_naming_the_field(change, message):
    with pytest.raises(ValueError, match=message):
        RMT({**TINY, **change})


def test_unknown_arch_and_missing_keys():
    with pytest.raises(KeyError, match=r"unknown arch 'xl'"):
        RMT('xl')
    partial = {k: v for k, v in TINY.items() if k != 'heads_ranges'}
    with pytest.raises(KeyError, match=r"missing \['heads_ranges'\]"):
        RMT(partial)


@pytest.mark.parametrize('out_indices', [(0, 4), (5, ), ()])
def test_out_indices_out_of_range(out_indices):
    with pytest.raises(ValueError, match=r'out_indices must be distinct stage indices in \[0, 3\]'):
        RMT(TINY, out_indices=out_indices)


def test_frozen_stages_out_of_range():
    with pytest.raises(ValueError, match=r'frozen_stages must be in \[-1, 4\]'):
        RMT(TINY, frozen_stages=5)


def test_input_with_wrong_channel_count():
    model = RMT(TINY)
    with pytest.raises(ValueError, match=r'expects \(B, 3, H, W\) inputs \(in_channels=3\), got \(1, 1, 32, 32\)'):
        model(torch.randn(1, 1, 32, 32))
    assert RMT(TINY, in_channels=1).eval()(torch.randn(1, 1, 32, 32))[0].shape == (1, 16, 8, 8)


@pytest.mark.parametrize('scope', ['mmdet', 'mmseg'])
def test_registered_for_mmdet_and_mmseg(scope):
    registry = __import__(f'{scope}.registry', fromlist=['MODELS']).MODELS
    model = registry.build(dict(type='RMT', arch=TINY))
    assert isinstance(model, RMT)


def test_custom_imports_config_builds_in_a_fresh_process(tmp_path):
    config = tmp_path / 'rmt_config.py'
    config.write_text(
        "custom_imports = dict(imports=['mmrmt'], allow_failed_imports=False)\n"
        f"model = dict(type='RMT', arch={TINY!r}, out_indices=(1, 2, 3))\n")
    script = ('import sys; from mmengine import Config; '
              'assert "mmrmt" not in sys.modules; '
              'cfg = Config.fromfile(sys.argv[1]); '
              'from mmdet.registry import MODELS as D; from mmseg.registry import MODELS as S; '
              'print(type(D.build(cfg.model)).__name__, type(S.build(cfg.model)).__name__)')
    result = subprocess.run([sys.executable, '-c', script, str(config)], capture_output=True,
                            text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ['RMT', 'RMT']
