"""ResMLP as a dense-prediction backbone: windowed token mixing and a pyramid.

ResMLP (`ResMLP: Feedforward networks for image classification with
data-efficient training <https://arxiv.org/abs/2105.03404>`_) is an
isotropic stack of residual blocks: an Affine pre-norm, a Linear across the
tokens (a fixed number of them: the 224x224 pretraining grid), a layer
scale; then an Affine pre-norm, a two-layer channel MLP, a layer scale.
Here the cross-token Linear works inside windows of the pretraining grid so
that any input size works, and four block outputs become a four-level
pyramid. Parameter names are timm's, so timm files load unchanged.
"""
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from timm.layers import DropPath, Mlp, lecun_normal_
from torch import nn

from mmrmt.checkpoint import StateDict
from ..layers import build_norm_layer, run_mode
from .arch import BOOL, POSITIVE_INT, POSITIVE_REAL, POWER_OF_TWO, check_arg, resolve_arch
from .base_backbone import PyramidBackbone, call_block, init_linears_and_layer_norms, takes_backbone_options

#: Strides of the four pyramid levels.
LEVEL_STRIDES = (4, 8, 16, 32)
#: The ResMLP authors' names (their deit repository) -> timm's, replaced in every key.
DEIT_TO_TIMM_RENAMES = (('patch_embed.', 'stem.'), ('.attn.', '.linear_tokens.'),
                        ('.mlp.', '.mlp_channels.'), ('.gamma_', '.ls'))


def ceil_div(size: int, step: int) -> int:
    """``ceil(size / step)`` for sizes >= 0, with non-negative operands only.

    Exported graphs compute sizes with ONNX's integer Div and Mod, which
    round negative operands otherwise than Python (``-(-a // b)`` and
    ``-a % b`` come out wrong at input sizes other than the traced one).
    """
    return (size + step - 1) // step


def crop(x: torch.Tensor, dim: int, start: int, length: int) -> torch.Tensor:
    """``x.narrow(dim, start, length)``; while a graph is recorded (:func:`.run_mode.records_graph`), a new
    tensor of those elements (``index_select``). A view is contiguous where nothing is cut off and strided
    where padding is, and a recorder that specialises on layouts keeps the traced size's as a condition on the
    input size: its program then refuses every size that pads otherwise ("Guard failed")."""
    if run_mode.records_graph():
        return x.index_select(dim, torch.arange(start, start + length, device=x.device))
    return x.narrow(dim, start, length)


class Affine(nn.Module):
    """ResMLP's per-channel ``alpha * x + beta`` "norm", channels last.

    Args:
        embed_dims (int): Channels.
    """

    def __init__(self, embed_dims: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, 1, embed_dims))
        self.beta = nn.Parameter(torch.zeros(1, 1, embed_dims))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(self.beta, self.alpha, x)


def mix_in_windows(x: torch.Tensor, linear: nn.Linear, window_size: Tuple[int, int],
                   shift: Tuple[int, int]) -> torch.Tensor:
    """Apply the token Linear ``linear`` inside non-overlapping windows.

    The (B, H, W, C) grid is zero-padded by ``shift`` at the top/left and to
    a multiple of the window at the bottom/right, every window's tokens
    (row-major, as timm flattens the 224x224 grid) are mixed, and the padding
    is cropped off. A zero token adds nothing to a window's mixing sum, so a
    real token gets the weighted sum of the real tokens of its window plus
    the bias of its position, as in timm.
    """
    batch, height, width, channels = x.shape
    (win_h, win_w), (top, left) = window_size, shift
    bottom = ceil_div(height + top, win_h) * win_h - height - top
    right = ceil_div(width + left, win_w) * win_w - width - left
    x = F.pad(x, (0, 0, left, right, top, bottom))
    rows, cols = (top + height + bottom) // win_h, (left + width + right) // win_w
    windows = x.view(batch, rows, win_h, cols, win_w, channels).permute(0, 1, 3, 5, 2, 4)
    mixed = linear(windows.reshape(batch, rows, cols, channels, win_h * win_w))
    mixed = mixed.view(batch, rows, cols, channels, win_h, win_w).permute(0, 1, 4, 2, 5, 3)
    mixed = mixed.reshape(batch, rows * win_h, cols * win_w, channels)
    return crop(crop(mixed, 1, top, height), 2, left, width)


class ResMLPBlock(nn.Module):
    """Affine -> windowed token Linear -> layer scale; Affine -> MLP -> layer scale.

    Args:
        embed_dims (int): Channels.
        window_size (tuple[int, int]): Token window of the cross-patch
            Linear (the pretraining grid).
        mlp_ratio (float): Channel MLP hidden channels / embed_dims.
        layer_scale_init (float): Initial value of ``ls1`` and ``ls2``.
        shift_windows (bool): Offset the windows by half a window along
            every axis on which the grid is larger than one window.
        drop_path (float): Stochastic depth rate.
    """

    def __init__(self, embed_dims: int, window_size: Tuple[int, int], mlp_ratio: float,
                 layer_scale_init: float, shift_windows: bool = False, drop_path: float = 0.) -> None:
        super().__init__()
        self.window_size = window_size
        self.shift_windows = shift_windows
        self.norm1 = Affine(embed_dims)
        self.linear_tokens = nn.Linear(window_size[0] * window_size[1], window_size[0] * window_size[1])
        self.drop_path = DropPath(drop_path) if drop_path > 0 else nn.Identity()
        self.norm2 = Affine(embed_dims)
        self.mlp_channels = Mlp(embed_dims, int(embed_dims * mlp_ratio))
        self.ls1 = nn.Parameter(torch.full((embed_dims, ), float(layer_scale_init)))
        self.ls2 = nn.Parameter(torch.full((embed_dims, ), float(layer_scale_init)))

    def window_shift(self, height: int, width: int) -> Tuple[int, int]:
        """Top/left offset of the windows on a ``height`` x ``width`` grid."""
        if not self.shift_windows:
            return 0, 0
        return tuple(size // 2 if extent > size else 0
                     for extent, size in zip((height, width), self.window_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shift = self.window_shift(x.shape[1], x.shape[2])
        mixed = mix_in_windows(self.norm1(x), self.linear_tokens, self.window_size, shift)
        x = x + self.drop_path(self.ls1 * mixed)
        return x + self.drop_path(self.ls2 * self.mlp_channels(self.norm2(x)))


class PaddedPatchStem(nn.Module):
    """Patchify conv after zero-padding the image to a multiple of the patch.

    Args:
        in_channels (int): Image channels.
        embed_dims (int): Token channels.
        patch_size (int): Patch side, also the conv's kernel and stride.
    """

    def __init__(self, in_channels: int, embed_dims: int, patch_size: int) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_channels, embed_dims, patch_size, patch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, in_channels, H, W) -> (B, ceil(H/p), ceil(W/p), embed_dims)."""
        height, width = x.shape[-2:]
        patch = self.patch_size
        x = F.pad(x, (0, ceil_div(width, patch) * patch - width, 0, ceil_div(height, patch) * patch - height))
        return self.proj(x).permute(0, 2, 3, 1)


def build_rescale(embed_dims: int, octaves: int, norm_cfg: dict) -> nn.Module:
    """Scale a feature map's resolution by ``2 ** octaves``.

    ``octaves`` > 0: that many 2x transposed convs, with ``norm_cfg`` and
    GELU between consecutive ones; 0: identity; < 0: max pooling in ceil
    mode (so that sizes stay ceil(image size / stride)).
    """
    if octaves < 0:
        return nn.MaxPool2d(2 ** -octaves, ceil_mode=True)
    layers: List[nn.Module] = []
    for step in range(octaves):
        if step:
            layers += [build_norm_layer(norm_cfg, embed_dims), nn.GELU()]
        layers.append(nn.ConvTranspose2d(embed_dims, embed_dims, 2, 2))
    return nn.Sequential(*layers) if layers else nn.Identity()


class ResMLP(PyramidBackbone):
    """ResMLP backbone with windowed cross-patch mixing and a feature pyramid.

    **Trunk.** timm's ResMLP classifier without its head, with timm's keys
    (``stem.proj``, ``blocks.i.{norm1,linear_tokens,ls1,norm2,mlp_channels,
    ls2}``, ``norm``), so timm checkpoints load as they are (the head is
    dropped and logged); files in the authors' (deit repository) layout are
    converted on loading. The image is zero-padded to a multiple of the patch.

    **Windows.** A block's cross-patch Linear mixes the tokens of one window
    of the pretraining grid (14x14, or 28x28 for big-24). The grid is
    zero-padded to a multiple of the window after the block's Affine
    pre-norm, which has a bias: padding before it would give the padded
    tokens that bias and let them into the mixing sum. Padded with zeros
    after it, they add nothing; each window's output is cropped back, so a
    real token gets the Linear's bias for its position once, as in timm.
    At a 224x224 input one window is the whole grid and every block computes
    exactly what timm's computes. Larger inputs mix within windows only.

    **Shift.** With ``shift_windows=True`` every odd block offsets its windows
    by half a window (the grid is padded by that much at the top/left, so
    tokens of opposite borders never share a window, unlike Swin's cyclic
    roll) along each axis on which the grid is larger than one window; at or
    below the pretraining size nothing changes. Information then crosses
    window borders, but the pretrained Linear of an odd block sees other
    neighbourhoods than in pretraining (a token sits at another window
    position and mixes with other tokens), so the features differ from the
    classifier's until fine-tuning adapts to it. Off by default.

    **Pyramid.** Level ``l`` of ``out_levels`` has stride ``(4, 8, 16, 32)[l]``
    and is made from the output of one block (``out_indices``, ascending,
    one per level): LayerNorm'd (the trunk's last block after timm's final
    Affine ``norm``), then rescaled. From the stride-16 trunk: two 2x
    transposed convs with a norm and GELU between them (stride 4), one
    transposed conv (8), identity (16), 2x max pooling (32); from the
    stride-8 trunk of big-24: one transposed conv, identity, 2x and 4x max
    pooling. Level sizes are ceil(image size / stride) and every level has
    the trunk's channels (384; 768 for big-24). All four levels (``out_norms``,
    ``rescales``) add 1,774,464 parameters to the 12/24/36 trunks and
    2,366,208 to big-24. Only the levels emitted are built, and no block
    after the last of ``out_indices`` (nor then ``norm``; their checkpoint
    keys are dropped and logged), so every parameter takes part in the loss:
    a detector whose neck skips the stride-4 level (RetinaNet) should set
    ``out_levels=(1, 2, 3)``.

    Args:
        arch (str | dict): '12'/'s12', '24'/'s24', '36'/'s36', 'big-24'/'b24',
            or a dict with ``embed_dims``, ``depth`` and ``patch_size`` (a
            power of two), and optionally ``mlp_ratio`` (4),
            ``layer_scale_init`` (1e-4) and ``window_size`` (the pretraining
            grid side, 224 // patch_size).
        out_levels (Sequence[int]): Pyramid levels to emit, among 0-3
            (strides 4, 8, 16, 32). Defaults to (0, 1, 2, 3).
        out_indices (Sequence[int], optional): The block feeding each level
            of ``out_levels``. Defaults to the blocks ``depth * (l + 1) / 4 - 1``,
            e.g. (2, 5, 8, 11) for 12 blocks.
        drop_path_rate (float): Stochastic depth rate, rising linearly over
            the blocks. Defaults to 0.1.
        shift_windows (bool): Shift the windows of odd blocks by half a
            window. Defaults to False.
        **options: The keyword-only options of every backbone, typed,
            defaulted and documented by :class:`PyramidBackbone`:
            ``in_channels``, ``frozen_stages`` (here -1: nothing, 0: the stem,
            k: the stem and the first k blocks, with the output norms of
            frozen blocks), ``norm_eval``, ``norm_cfg`` (here the norm between
            the two transposed convs of the stride-4 level), ``with_cp`` (per
            block), ``init_cfg`` (a timm or authors' ImageNet checkpoint) and
            the deprecated ``pretrained``.
    """

    arch_zoo: Dict[str, dict] = {
        **dict.fromkeys(['12', 's12'], dict(embed_dims=384, depth=12, patch_size=16, layer_scale_init=1e-4)),
        **dict.fromkeys(['24', 's24'], dict(embed_dims=384, depth=24, patch_size=16, layer_scale_init=1e-5)),
        **dict.fromkeys(['36', 's36'], dict(embed_dims=384, depth=36, patch_size=16, layer_scale_init=1e-6)),
        **dict.fromkeys(['big-24', 'b24'], dict(embed_dims=768, depth=24, patch_size=8, layer_scale_init=1e-6)),
    }
    #: What a custom arch holds: required and optional scalars.
    arch_args = dict(embed_dims=POSITIVE_INT, depth=POSITIVE_INT, patch_size=POWER_OF_TWO)
    optional_arch_args = dict(mlp_ratio=POSITIVE_REAL, layer_scale_init=POSITIVE_REAL, window_size=POSITIVE_INT)
    dropped_checkpoint_prefixes = ('head.', )
    new_checkpoint_prefixes = ('out_norms.', 'rescales.')

    @takes_backbone_options
    def __init__(self,
                 arch: Union[str, dict] = '12',
                 out_levels: Sequence[int] = (0, 1, 2, 3),
                 out_indices: Optional[Sequence[int]] = None,
                 drop_path_rate: float = 0.1,
                 shift_windows: bool = False,
                 **options: Any) -> None:
        settings = self._settings(arch)
        check_arg('ResMLP', 'shift_windows', shift_windows, BOOL)
        dims, depth, patch = settings['embed_dims'], settings['depth'], settings['patch_size']
        levels = tuple(out_levels) if isinstance(out_levels, Sequence) and not isinstance(out_levels, str) else ()
        if (not levels or list(levels) != sorted(set(levels)) or not set(levels) <= {0, 1, 2, 3}
                or any(isinstance(level, bool) for level in levels)):
            raise ValueError(f'ResMLP: out_levels must be ascending distinct pyramid levels among '
                             f'(0, 1, 2, 3) (strides {LEVEL_STRIDES}), got {out_levels!r}.')
        out_levels = levels
        if out_indices is None:
            out_indices = self._default_out_indices(depth, out_levels)
        if not isinstance(out_indices, Sequence) or len(out_indices) != len(out_levels):
            raise ValueError(f'ResMLP: out_indices must name one block for each of the out_levels '
                             f'{out_levels}, got {out_indices!r}.')
        super().__init__(depth, out_indices, drop_path_rate, **options)
        if [index % depth for index in out_indices] != list(self.out_indices):
            raise ValueError(f'ResMLP: out_indices must be ascending (the block of each level of out_levels, '
                             f'in order), got {out_indices!r}.')
        self.embed_dims = dims
        self.depth = depth
        self.out_levels = out_levels
        last = self.out_indices[-1]
        window = settings.get('window_size', 224 // patch)
        drop_paths = [drop_path_rate * i / max(depth - 1, 1) for i in range(depth)]  # linear rise

        self.stem = PaddedPatchStem(self.in_channels, dims, patch)
        self.blocks = nn.ModuleList(
            ResMLPBlock(dims, (window, window), settings.get('mlp_ratio', 4),
                        settings.get('layer_scale_init', 1e-4),
                        shift_windows=shift_windows and i % 2 == 1, drop_path=drop_paths[i])
            for i in range(last + 1))
        self.norm = Affine(dims) if last == depth - 1 else None
        self.out_norms = nn.ModuleDict({str(level): nn.LayerNorm(dims) for level in out_levels})
        self.rescales = nn.ModuleDict({
            str(level): build_rescale(dims, int(math.log2(patch / LEVEL_STRIDES[level])), self.norm_cfg)
            for level in out_levels})
        self._freeze_stages()

    def checkpoint_prefixes_to_drop(self) -> Tuple[str, ...]:
        """The classifier, and the blocks and final norm past the last emitted level when those are not built."""
        unbuilt = range(self.out_indices[-1] + 1, self.depth)
        if not unbuilt:
            return self.dropped_checkpoint_prefixes
        return (*self.dropped_checkpoint_prefixes, 'norm.', *(f'blocks.{i}.' for i in unbuilt))

    @staticmethod
    def convert_checkpoint(state_dict: StateDict) -> StateDict:
        """An authors' file (their deit repository) to timm's keys, on loading (``alpha`` / ``beta`` in timm's
        (1, 1, C) shape); a timm file is returned as it is."""
        if 'patch_embed.proj.weight' not in state_dict:
            return state_dict
        converted = {}
        for key, value in state_dict.items():
            for old, new in DEIT_TO_TIMM_RENAMES:
                key = key.replace(old, new)
            converted[key] = value.reshape(1, 1, -1) if key.endswith(('.alpha', '.beta')) else value
        return converted

    @staticmethod
    def _default_out_indices(depth: int, out_levels: Tuple[int, ...]) -> Tuple[int, ...]:
        """The block ``depth * (l + 1) / 4 - 1`` for each level ``l``: ascending distinct blocks, or
        a ``ValueError`` saying that ``depth`` is too small for that many levels."""
        def spread(blocks: int) -> Tuple[int, ...]:
            return tuple(blocks * (level + 1) // len(LEVEL_STRIDES) - 1 for level in out_levels)

        def valid(indices: Tuple[int, ...]) -> bool:
            return indices[0] >= 0 and all(a < b for a, b in zip(indices, indices[1:]))

        if not valid(spread(depth)):
            least = next(blocks for blocks in range(depth + 1, len(LEVEL_STRIDES) + 1) if valid(spread(blocks)))
            raise ValueError(f'ResMLP: arch depth {depth} is too small for the {len(out_levels)} levels of '
                             f'out_levels {out_levels} (each comes from a block of its own, spread over the '
                             f'depth): give a depth of at least {least}, fewer out_levels, or out_indices.')
        return spread(depth)

    @classmethod
    def _settings(cls, arch: Union[str, dict]) -> dict:
        settings = resolve_arch(arch, cls.arch_zoo, 'ResMLP', scalars=cls.arch_args,
                                optional=cls.optional_arch_args)
        if 'window_size' not in settings:
            check_arg('ResMLP', "arch['window_size'] (by default 224 // patch_size, the pretraining grid)",
                      224 // settings['patch_size'], POSITIVE_INT)
        return settings

    def output_norm(self, stage: int) -> nn.Module:
        """The LayerNorm of the level that block ``stage`` feeds."""
        return self.out_norms[str(self.out_levels[self.out_indices.index(stage)])]

    def _frozen_modules(self) -> List[nn.Module]:
        if self.frozen_stages < 0:
            return []
        frozen = [self.stem, *self.blocks[:self.frozen_stages]]
        if self.norm is not None and self.frozen_stages >= self.depth:
            frozen.append(self.norm)
        return frozen + self.frozen_output_norms()

    def _init_default_weights(self) -> None:
        lecun_normal_(self.stem.proj.weight)
        nn.init.zeros_(self.stem.proj.bias)
        init_linears_and_layer_norms(self, nn.init.xavier_uniform_)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        self.check_input(x)
        height, width = x.shape[-2:]
        x = self.stem(x)  # (B, h, w, C)
        outs = []
        for i, block in enumerate(self.blocks):
            x = call_block(block, x, with_cp=self.with_cp)
            if i in self.out_indices:
                level = self.out_levels[len(outs)]
                feature = self.norm(x) if self.norm is not None and i == self.depth - 1 else x
                feature = self.rescales[str(level)](self.emit(i, feature))
                stride = LEVEL_STRIDES[level]
                feature = crop(crop(feature, -2, 0, ceil_div(height, stride)), -1, 0, ceil_div(width, stride))
                outs.append(feature.contiguous())
        return tuple(outs)
