"""The ResMLP backbone: timm exactness, windows, pyramid, loading, freezing.

What all three backbones share is tested in test_backbone_contract.py.
"""
from pathlib import Path
from typing import List, Tuple

import pytest
import timm
import torch
from timm.models.mlp_mixer import Affine as TimmAffine, MlpMixer, ResBlock

from mmrmt.models import ResMLP
from mmrmt.models.backbones.resmlp import mix_in_windows
from helpers.backbones import RESMLP_TINY as TINY
from helpers.checkpoints import init_and_capture_summary, pretrained, save
from helpers.rounding import assert_close, two_implementations

#: Documented parameters of the four pyramid levels (out_norms + rescales).
PYRAMID_PARAMS = {'12': 1_774_464, '24': 1_774_464, '36': 1_774_464, 'big-24': 2_366_208}


def params(model: torch.nn.Module, prefixes: Tuple[str, ...] = ('', )) -> int:
    return sum(p.numel() for name, p in model.named_parameters() if name.startswith(prefixes))


def randomize(model: torch.nn.Module, seed: int = 0) -> None:
    """Give every parameter a random value of order one (layer scales and Affine biases included)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            scale = 0.5 if name.endswith(('ls1', 'ls2', 'alpha', 'beta')) else param.shape[-1] ** -0.5
            param.copy_(torch.randn(param.shape, generator=generator) * scale)


def load_through_init_cfg(model_args: dict, state_dict: dict, path: Path) -> Tuple[ResMLP, str]:
    """Build ResMLP with ``init_cfg`` pointing at ``state_dict``; return it and the loader's summary."""
    return init_and_capture_summary(ResMLP(**model_args, init_cfg=pretrained(save({'model': state_dict}, path))))


def block_outputs(model: torch.nn.Module, modules, image: torch.Tensor) -> List[torch.Tensor]:
    """Outputs of ``modules`` in one forward pass of ``model``, then the model's result."""
    outputs = []
    hooks = [module.register_forward_hook(lambda m, i, o: outputs.append(o)) for module in modules]
    with torch.no_grad():
        outputs.append(model(image))
    for hook in hooks:
        hook.remove()
    return outputs


def tiny_timm(patch_size: int, depth: int = 4, embed_dim: int = 16) -> MlpMixer:
    return MlpMixer(img_size=224, patch_size=patch_size, num_blocks=depth, embed_dim=embed_dim,
                    mlp_ratio=2, block_layer=ResBlock, norm_layer=TimmAffine, num_classes=10)


# --- exactness against timm ---------------------------------------------------------------------
def block_tolerance(terms: int, blocks: int) -> float:
    """Two float32 computations of ``blocks`` ResMLP blocks apart by at most this
    (relative): each block's four steps (Affine, token mixing, fc1, fc2) reduce over
    at most ``terms`` (the tokens mixed or the hidden channels)."""
    return two_implementations(torch.float32, terms, 4 * blocks)


@pytest.mark.slow  # ResMLP-12 itself; the tiny layouts below are the fast tier's
def test_resmlp_12_blocks_equal_timm_at_224(tmp_path):
    torch.manual_seed(0)
    reference = timm.create_model('resmlp_12_224', pretrained=False).eval()
    randomize(reference)
    model, summary = load_through_init_cfg(dict(arch='12', drop_path_rate=0.), reference.state_dict(),
                                           tmp_path / 'resmlp_12.pth')
    model.eval()
    image = torch.randn(1, 3, 224, 224)
    *theirs, final = block_outputs(reference.forward_features, reference.blocks, image)
    *ours, our_final, pyramid = block_outputs(model, [*model.blocks, model.norm], image)
    assert len(ours) == len(theirs) == 12
    for index, (a, b) in enumerate(zip(ours, theirs)):
        assert a.shape == (1, 14, 14, 384)
        assert_close(a.flatten(1, 2), b, block_tolerance(1536, index + 1), msg=str(index))
    # The last level starts from timm's final (Affine-normed) features.
    assert_close(our_final.flatten(1, 2), final, block_tolerance(1536, 12))
    assert (pyramid[3] - torch.max_pool2d(model.out_norms['3'](our_final).permute(0, 3, 1, 2), 2)).abs().max() == 0


@pytest.mark.parametrize('patch_size,shift', [(8, False), (8, True), (16, True)])
def test_tiny_timm_layouts_equal_at_224_with_and_without_shift(patch_size, shift):
    """Patch 8 is big-24's layout (28x28 windows); at 224 the shift switch changes nothing."""
    reference = tiny_timm(patch_size).eval()
    randomize(reference, seed=1)
    model = ResMLP(dict(embed_dims=16, depth=4, patch_size=patch_size, mlp_ratio=2),
                   shift_windows=shift, drop_path_rate=0.).eval()
    model.load_state_dict({k: v for k, v in reference.state_dict().items() if not k.startswith('head.')},
                          strict=False)
    image = torch.randn(2, 3, 224, 224)
    for a, b in zip(block_outputs(model, model.blocks, image)[:-1],
                    block_outputs(reference, reference.blocks, image)[:-1]):
        assert_close(a.flatten(1, 2), b, block_tolerance(max((224 // patch_size) ** 2, 32), 4))


def test_larger_inputs_apply_timm_blocks_within_each_window():
    """At 448x448 each 14x14 window of a block is timm's block on that window's tokens."""
    reference = tiny_timm(16).eval()
    randomize(reference, seed=2)
    model = ResMLP(dict(embed_dims=16, depth=4, patch_size=16, mlp_ratio=2), drop_path_rate=0.).eval()
    model.load_state_dict(reference.state_dict(), strict=False)
    tokens = torch.randn(2, 28, 28, 16)
    with torch.no_grad():
        ours = model.blocks[0](tokens)
        for rows in (slice(0, 14), slice(14, 28)):
            for cols in (slice(0, 14), slice(14, 28)):
                window = reference.blocks[0](tokens[:, rows, cols].flatten(1, 2))
                assert_close(ours[:, rows, cols].flatten(1, 2), window, block_tolerance(14 * 14, 1))


# --- windows --------------------------------------------------------------------------------------
def reference_window_mixing(x: torch.Tensor, linear: torch.nn.Linear, window: Tuple[int, int],
                            shift: Tuple[int, int]) -> torch.Tensor:
    """Token by token: the weighted sum over the real tokens sharing its window, plus its position's bias."""
    batch, height, width, channels = x.shape
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing='ij')
    rows, cols = rows.flatten() + shift[0], cols.flatten() + shift[1]
    window_id = (rows // window[0]) * 10_000 + cols // window[1]
    position = (rows % window[0]) * window[1] + cols % window[1]
    same_window = window_id[:, None] == window_id[None, :]
    mixing = linear.weight[position][:, position] * same_window
    out = torch.einsum('ts,bsc->btc', mixing, x.flatten(1, 2)) + linear.bias[position][None, :, None]
    return out.view(batch, height, width, channels)


def reference_block(block: torch.nn.Module, x: torch.Tensor, window: Tuple[int, int],
                    shift: Tuple[int, int]) -> torch.Tensor:
    """What a ResMLP block computes, its window mixing done token by token."""
    after_tokens = x + block.ls1 * reference_window_mixing(block.norm1(x), block.linear_tokens, window, shift)
    return after_tokens + block.ls2 * block.mlp_channels(block.norm2(after_tokens))


@pytest.mark.parametrize('grid,window,shift', [
    ((4, 4), (4, 4), (0, 0)),    # one full window
    ((3, 2), (4, 4), (0, 0)),    # grid smaller than the window: zero padding
    ((7, 9), (3, 4), (0, 0)),    # several windows, partial ones at the bottom/right
    ((7, 9), (3, 4), (1, 2)),    # shifted windows
    ((5, 3), (2, 2), (1, 0)),
])
def test_window_mixing_equals_per_token_reference(grid, window, shift):
    torch.manual_seed(0)
    linear = torch.nn.Linear(window[0] * window[1], window[0] * window[1])
    x = torch.randn(2, *grid, 5)
    with torch.no_grad():
        assert_close(mix_in_windows(x, linear, window, shift), reference_window_mixing(x, linear, window, shift),
                     two_implementations(torch.float32, window[0] * window[1]))  # one sum over a window


def test_padding_comes_after_the_affine_pre_norm():
    """A block on a grid smaller than its window sees only real tokens, even with a non-zero Affine bias."""
    torch.manual_seed(0)
    model = ResMLP(dict(embed_dims=8, depth=4, patch_size=16, window_size=4), drop_path_rate=0.).eval()
    randomize(model)
    block = model.blocks[0]
    x = torch.randn(1, 3, 2, 8)
    with torch.no_grad():
        assert_close(block(x), reference_block(block, x, (4, 4), (0, 0)), block_tolerance(4 * 8, 1))


def test_shift_moves_windows_of_odd_blocks_only_on_grids_larger_than_a_window():
    model = ResMLP(TINY, shift_windows=True)
    assert [block.window_shift(5, 5) for block in model.blocks] == [(0, 0), (1, 1), (0, 0), (1, 1)]
    assert model.blocks[1].window_shift(2, 7) == (0, 1)
    assert all(block.window_shift(5, 5) == (0, 0) for block in ResMLP(TINY).blocks)
    # The shifted block mixes the shifted windows.
    block = model.blocks[1].eval()
    randomize(block)
    x = torch.randn(1, 5, 5, 16)
    with torch.no_grad():
        assert_close(block(x), reference_block(block, x, (2, 2), (1, 1)), block_tolerance(2 * 16, 1))


# --- pyramid and sizes ----------------------------------------------------------------------------
@pytest.mark.parametrize('patch_size', [16, 8])
@pytest.mark.parametrize('size', [(200, 317), (64, 64), (33, 17), (7, 100)])
def test_any_input_size_gives_strides_4_to_32_with_ceil_sizes(patch_size, size):
    model = ResMLP({**TINY, 'patch_size': patch_size}, shift_windows=True).eval()
    with torch.no_grad():
        outputs = model(torch.randn(1, 3, *size))
    expected = [(1, 16, -(-size[0] // stride), -(-size[1] // stride)) for stride in (4, 8, 16, 32)]
    assert [tuple(o.shape) for o in outputs] == expected
    assert all(o.is_contiguous() for o in outputs)


def test_pyramid_is_built_as_documented():
    stride16 = ResMLP(TINY)
    kinds = {level: [type(m).__name__ for m in stride16.rescales[level].modules()][1:]
             for level in ('0', '1')}
    assert kinds == {'0': ['ConvTranspose2d', 'BatchNorm2d', 'GELU', 'ConvTranspose2d'],
                     '1': ['ConvTranspose2d']}
    assert isinstance(stride16.rescales['2'], torch.nn.Identity)
    assert stride16.rescales['3'].kernel_size == 2
    stride8 = ResMLP({**TINY, 'patch_size': 8}, norm_cfg=dict(type='GN', num_groups=4))
    assert [type(m).__name__ for m in stride8.rescales['0'].modules()][1:] == ['ConvTranspose2d']
    assert isinstance(stride8.rescales['1'], torch.nn.Identity)
    assert [stride8.rescales[level].kernel_size for level in ('2', '3')] == [2, 4]
    gn = ResMLP(TINY, norm_cfg=dict(type='GN', num_groups=4))
    assert type(gn.rescales['0'][1]).__name__ == 'GroupNorm'


def test_default_out_indices_are_evenly_spaced():
    with torch.device('meta'):
        assert ResMLP('12').out_indices == (2, 5, 8, 11)
        assert ResMLP('s24').out_indices == (5, 11, 17, 23)
        assert ResMLP('36').out_indices == (8, 17, 26, 35)
        assert ResMLP('b24').out_indices == (5, 11, 17, 23)
        assert ResMLP('12', out_levels=(1, 2, 3)).out_indices == (5, 8, 11)


@pytest.mark.parametrize('depth,out_levels,least', [(1, (0, 1, 2, 3), 4), (2, (0, 1, 2, 3), 4), (3, (0, 1, 2, 3), 4),
                                                    (2, (0, 1), 4), (1, (1, 3), 2)])
def test_a_depth_too_small_for_the_levels_says_so(depth, out_levels, least):
    with pytest.raises(ValueError) as error:
        ResMLP(dict(embed_dims=8, depth=depth, patch_size=16), out_levels=out_levels)
    assert str(error.value) == (
        f'ResMLP: arch depth {depth} is too small for the {len(out_levels)} levels of out_levels {out_levels} (each '
        f'comes from a block of its own, spread over the depth): give a depth of at least {least}, fewer out_levels, '
        'or out_indices.')
    assert ResMLP(dict(embed_dims=8, depth=least, patch_size=16), out_levels=out_levels).out_indices
    assert ResMLP(dict(embed_dims=8, depth=1, patch_size=16), out_levels=(3, )).out_indices == (0, )


def test_out_levels_emit_a_subset_and_build_only_it():
    model = ResMLP(TINY, out_levels=(1, 2, 3)).eval()
    outputs = model(torch.randn(1, 3, 64, 96))
    assert [tuple(o.shape[2:]) for o in outputs] == [(8, 12), (4, 6), (2, 3)]
    assert sorted(model.out_norms) == sorted(model.rescales) == ['1', '2', '3']


def test_blocks_after_the_last_out_index_are_not_built(tmp_path):
    reference = tiny_timm(16, depth=6)
    model, summary = load_through_init_cfg(dict(arch={**TINY, 'depth': 6, 'window_size': 14},
                                                out_indices=(0, 1, 2, 3)),
                                           reference.state_dict(), tmp_path / 'tiny.pth')
    assert len(model.blocks) == 4 and model.norm is None
    for key in ('blocks.4.linear_tokens.weight', 'blocks.5.ls2', 'norm.alpha', 'head.weight'):
        assert key in summary.split('unexpected keys')[1]
    assert torch.equal(model.blocks[3].linear_tokens.weight, reference.blocks[3].linear_tokens.weight)


# --- parameter counts -----------------------------------------------------------------------------
@pytest.mark.parametrize('arch,timm_name,spec_millions', [
    ('12', 'resmlp_12_224', 15.35), ('24', 'resmlp_24_224', 30.02),
    ('36', 'resmlp_36_224', 44.69), ('big-24', 'resmlp_big_24_224', 129.14)])
def test_trunk_is_timm_classifier_minus_head_and_pyramid_adds_documented_count(arch, timm_name, spec_millions):
    with torch.device('meta'):
        reference = timm.create_model(timm_name, pretrained=False)
        model = ResMLP(arch)
    assert round(params(reference) / 1e6, 2) == spec_millions
    pyramid = params(model, ResMLP.new_checkpoint_prefixes)
    assert params(model) - pyramid == params(reference) - params(reference, ('head.', ))
    assert pyramid == PYRAMID_PARAMS[arch]
    assert {k: v.shape for k, v in model.state_dict().items() if not k.startswith(ResMLP.new_checkpoint_prefixes)} \
        == {k: v.shape for k, v in reference.state_dict().items() if not k.startswith('head.')}


# --- checkpoints ----------------------------------------------------------------------------------
def test_timm_state_dict_loads_with_only_the_head_unexpected(tmp_path):
    reference = tiny_timm(16)
    randomize(reference)
    model, summary = load_through_init_cfg(dict(arch={**TINY, 'window_size': 14}), reference.state_dict(),
                                           tmp_path / 'timm.pth')
    state = model.state_dict()
    for key, value in reference.state_dict().items():
        if not key.startswith('head.'):
            assert torch.equal(state[key], value), key
    missing, unexpected = summary.split('unexpected keys')
    assert "['head.bias', 'head.weight']" in unexpected
    assert 'out_norms.0.weight' in missing and 'rescales.0.0.weight' in missing
    assert 'blocks.' not in missing and 'stem.' not in missing


def test_authors_checkpoint_layout_is_converted(tmp_path):
    reference = tiny_timm(16)
    randomize(reference)
    renames = (('stem.', 'patch_embed.'), ('.linear_tokens.', '.attn.'), ('.mlp_channels.', '.mlp.'),
               ('.ls', '.gamma_'))
    authors = {}
    for key, value in reference.state_dict().items():
        for timm_name, authors_name in renames:
            key = key.replace(timm_name, authors_name)
        authors[key] = value.flatten() if key.endswith(('alpha', 'beta')) else value
    assert 'blocks.0.gamma_1' in authors and authors['norm.alpha'].shape == (16, )
    model, _ = load_through_init_cfg(dict(arch={**TINY, 'window_size': 14}), authors, tmp_path / 'fb.pth')
    state = model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in reference.state_dict().items() if not k.startswith('head.'))


def test_checkpoint_of_another_window_size_names_the_shapes(tmp_path):
    path = save({'model': tiny_timm(16).state_dict()}, tmp_path / 'window14.pth')
    model = ResMLP(TINY, init_cfg=pretrained(path))
    with pytest.raises(ValueError, match=r'blocks\.0\.linear_tokens\.weight: file \(196, 196\) vs model \(4, 4\)'):
        model.init_weights()


# --- gradients in a detector, freezing ------------------------------------------------------------
def _retinanet(out_levels: Tuple[int, ...]) -> dict:
    first_stride = (4, 8, 16, 32)[out_levels[0]]
    return dict(
        type='RetinaNet',
        data_preprocessor=dict(type='DetDataPreprocessor', mean=[0, 0, 0], std=[255, 255, 255],
                               pad_size_divisor=32),
        backbone=dict(type='ResMLP', arch=TINY, out_levels=out_levels, shift_windows=True),
        neck=dict(type='FPN', in_channels=[16] * len(out_levels), out_channels=8, start_level=0,
                  add_extra_convs='on_input', num_outs=5),
        bbox_head=dict(
            type='RetinaHead', num_classes=2, in_channels=8, stacked_convs=1, feat_channels=8,
            anchor_generator=dict(type='AnchorGenerator', octave_base_scale=4, scales_per_octave=1,
                                  ratios=[1.0], strides=[first_stride * 2 ** i for i in range(5)]),
            bbox_coder=dict(type='DeltaXYWHBBoxCoder', target_means=[0.] * 4, target_stds=[1.] * 4),
            loss_cls=dict(type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25, loss_weight=1.0),
            loss_bbox=dict(type='L1Loss', loss_weight=1.0)),
        train_cfg=dict(assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.5, neg_iou_thr=0.4, min_pos_iou=0,
                                     ignore_iof_thr=-1),
                       sampler=dict(type='PseudoSampler'), allowed_border=-1, pos_weight=-1, debug=False),
        test_cfg=dict(nms_pre=100, min_bbox_size=0, score_thr=0.05, nms=dict(type='nms', iou_threshold=0.5),
                      max_per_img=10))


@pytest.mark.parametrize('out_levels', [(0, 1, 2, 3), (1, 2, 3)])
def test_detector_training_step_leaves_no_backbone_parameter_unused(out_levels):
    from mmdet.registry import MODELS
    from mmdet.structures import DetDataSample
    from mmdet.utils import register_all_modules
    from mmengine.structures import InstanceData
    register_all_modules(init_default_scope=True)
    torch.manual_seed(0)
    detector = MODELS.build(_retinanet(out_levels)).train()
    sample = DetDataSample(metainfo=dict(img_shape=(64, 64), ori_shape=(64, 64), pad_shape=(64, 64),
                                         batch_input_shape=(64, 64), scale_factor=(1., 1.)))
    sample.gt_instances = InstanceData(bboxes=torch.tensor([[8., 10., 40., 50.], [30., 5., 60., 30.]]),
                                       labels=torch.tensor([0, 1]))
    image = torch.randint(0, 256, (3, 64, 64), dtype=torch.uint8)
    data = detector.data_preprocessor(dict(inputs=[image], data_samples=[sample]), training=True)
    losses = detector(**data, mode='loss')
    total, _ = detector.parse_losses(losses)
    total.backward()
    assert [name for name, p in detector.backbone.named_parameters() if p.grad is None] == []
    assert all(p.grad is not None for p in detector.parameters())


def test_frozen_stages_stop_the_stem_and_the_first_blocks():
    model = ResMLP(TINY, frozen_stages=2, out_indices=(0, 1, 2, 3)).train()
    frozen = [model.stem, model.blocks[0], model.blocks[1], model.out_norms['0'], model.out_norms['1']]
    assert all(not p.requires_grad for module in frozen for p in module.parameters())
    trainable = [model.blocks[2], model.blocks[3], model.norm, model.out_norms['2'], model.rescales]
    assert all(p.requires_grad for module in trainable for p in module.parameters())
    outputs = model(torch.randn(1, 3, 64, 64))
    sum(o.sum() for o in outputs).backward()
    assert all(p.grad is None for p in model.blocks[1].parameters())
    assert all(p.grad is not None for p in model.blocks[2].parameters())


@pytest.mark.parametrize('frozen_stages,trainable_blocks', [(-1, 4), (0, 4), (4, 0)])
def test_frozen_stages_bounds(frozen_stages, trainable_blocks):
    model = ResMLP(TINY, frozen_stages=frozen_stages).train()
    assert all(p.requires_grad != (frozen_stages >= 0) for p in model.stem.parameters())
    assert sum(all(p.requires_grad for p in b.parameters()) for b in model.blocks) == trainable_blocks
    assert all(p.requires_grad == (frozen_stages < 4) for p in model.norm.parameters())


# --- arch names -----------------------------------------------------------------------------------
def test_arch_aliases():
    with torch.device('meta'):
        assert ResMLP('S12').depth == 12 and ResMLP('b24').embed_dims == 768
        assert len(ResMLP('big-24').blocks[0].linear_tokens.weight) == 28 * 28
