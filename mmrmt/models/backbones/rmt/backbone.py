"""RMT: Retentive Networks Meet Vision Transformers, as a dense-prediction backbone."""
from functools import partial
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch
from timm.layers import trunc_normal_
from torch import nn

from mmrmt.checkpoint import StateDict, extract_state_dict
from ...layers import build_norm_layer
from ..arch import (BOOL, NON_NEGATIVE_INT, NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL, UpstreamFiles,
                    check_heads_divide_dims, resolve_arch)
from ..base_backbone import PyramidBackbone, init_linears_and_layer_norms, takes_backbone_options
from .attention_maps import AttentionMaps, query_maps
from .block import RMTStage
from .implementations import implementation

#: The variants' names, in the columns of :data:`VARIANT_SETTINGS`.
VARIANT_NAMES = (('t', 'tiny'), ('s', 'small'), ('b', 'base'), ('l', 'large'))
#: Each variant's settings: one row an argument, one column a variant (T, S, B, L).
VARIANT_SETTINGS = dict(
    embed_dims=([64, 128, 256, 512], [64, 128, 256, 512], [80, 160, 320, 512], [112, 224, 448, 640]),
    depths=([2, 2, 8, 2], [3, 4, 18, 4], [4, 8, 25, 8], [4, 8, 25, 8]),
    num_heads=([4, 4, 8, 16], [4, 4, 8, 16], [5, 5, 10, 16], [7, 7, 14, 20]),
    mlp_ratios=([3, 3, 3, 3], [4, 4, 3, 3], [4, 4, 3, 3], [4, 4, 3, 3]),
    init_values=([2, 2, 2, 2], [2, 2, 2, 2], [2, 2, 2, 2], [2, 2, 2, 2]),
    heads_ranges=([4, 4, 6, 6], [4, 4, 6, 6], [5, 5, 6, 6], [6, 6, 6, 6]),
    decomposed=([True, True, False, False], [True, True, True, False], [True, True, True, False],
                [True, True, True, False]),
    layer_scales=([False, False, False, False], [False, False, False, False], [False, False, True, True],
                  [False, False, True, True]),
)


def check_even_head_dims(dims: Sequence[int], heads: Sequence[int], owner: str) -> None:
    """Fail unless every stage's head dimension is even, as the rotary encoding needs."""
    for stage, (channels, num_heads) in enumerate(zip(dims, heads)):
        if (channels // num_heads) % 2:
            raise ValueError(f'{owner}: the head dimension embed_dims[{stage}] / num_heads[{stage}] '
                             f'= {channels // num_heads} is odd; the rotary encoding needs an '
                             'even head dimension.')


def rmt_upstream_to_mmrmt(state_dict: StateDict) -> StateDict:
    """An upstream RMT file (ImageNet classifier, or an mmdet 2.x / mmseg 0.x model: its ``backbone.`` kept) to the
    RMT backbone, which keeps the upstream names; a ``ValueError`` when it holds no RMT backbone."""
    if any(key.startswith('backbone.') for key in state_dict):
        state_dict = extract_state_dict(state_dict, prefix='backbone.')
    if 'patch_embed.proj.0.weight' not in state_dict or not any(key.startswith('layers.') for key in state_dict):
        raise ValueError('not an RMT checkpoint: expected the keys patch_embed.proj.* and layers.* '
                         '(at the top level or under backbone.)')
    return state_dict


class RMT(PyramidBackbone):
    """RMT backbone: Manhattan self-attention with a spatial decay prior.

    A PyTorch implementation of `RMT: Retentive Networks Meet Vision
    Transformers <https://arxiv.org/abs/2309.11523>`_ exact to the upstream
    ImageNet checkpoints (keys ``patch_embed``, ``layers``; the output norms
    are ``extra_norms``, as in the upstream detection code): a four-conv
    stem, then stages of blocks (:class:`.block.RMTStage`), each emitted
    through a LayerNorm.

    Args:
        arch (str | dict): 't'/'tiny', 's'/'small', 'b'/'base', 'l'/'large',
            or a dict with the per-stage lists ``embed_dims``, ``depths``,
            ``num_heads``, ``mlp_ratios``, ``init_values``, ``heads_ranges``,
            ``decomposed`` (bool per stage) and ``layer_scales`` (bool per
            stage), and optionally the scalar ``layer_scale_init`` (1e-6).
        out_indices (Sequence[int]): Stages to output. Defaults to (0, 1, 2, 3).
        drop_path_rate (float): Stochastic depth rate, rising linearly over
            the blocks. Defaults to 0.1.
        impl (str): ``'fast'`` (the default: fused attention with cached
            tables, pre-norms fused into the projections, residuals folded
            into the depthwise kernels, less kept for backward, and in CPU
            inference the stem and blocks on a few images at a time),
            ``'flex'`` (the fast one whose MaSA attends through FlexAttention,
            the decay added inside the kernel, on CUDA and in compiled CPU
            inference; elsewhere the fast one) or ``'reference'`` (the
            paper's computation step by step, the oracle of the tests). All
            compute the same function with the same parameters; see
            :mod:`.implementations`.
        **options: The keyword-only options of every backbone, typed,
            defaulted and documented by :class:`PyramidBackbone`:
            ``in_channels``, ``frozen_stages`` (here -1: none, 0: the stem,
            k: the stem and stages 1..k), ``norm_eval``, ``norm_cfg`` (here
            the norm of the stem and downsampling convs), ``with_cp`` (per
            block), ``init_cfg`` (an upstream ImageNet or detection
            checkpoint) and the deprecated ``pretrained``.

    :meth:`attention_maps` gives what a block's MaSA weighs the tokens by for
    one query token: the decay prior and the attention of each head.
    """

    arch_zoo: Dict[str, dict] = {name: {key: values[column] for key, values in VARIANT_SETTINGS.items()}
                                 for column, names in enumerate(VARIANT_NAMES) for name in names}
    #: What a custom arch holds: one value per stage of each key, and optional scalars.
    per_stage_args = dict(embed_dims=POSITIVE_INT, depths=NON_NEGATIVE_INT, num_heads=POSITIVE_INT,
                          mlp_ratios=POSITIVE_REAL, init_values=POSITIVE_REAL,
                          heads_ranges=NON_NEGATIVE_REAL, decomposed=BOOL, layer_scales=BOOL)
    optional_arch_args = dict(layer_scale_init=POSITIVE_REAL)
    #: The classifier of the ImageNet files; ``aux_head`` is the per-token
    #: classifier of the authors' token-labelled checkpoints (RMT-S*/B*/L*).
    dropped_checkpoint_prefixes = ('proj.', 'norm.', 'head.', 'aux_head.')
    new_checkpoint_prefixes = ('extra_norms.', )
    #: What tools/model_converters/rmt_to_mmrmt.py converts, and how it names the variant.
    upstream_files = UpstreamFiles(rmt_upstream_to_mmrmt, r'layers\.(\d+)\.blocks\.(\d+)\.',
                                   'layers.{}.blocks.0.retention_layer_norm.weight')

    @takes_backbone_options
    def __init__(self,
                 arch: Union[str, dict] = 't',
                 out_indices: Sequence[int] = (0, 1, 2, 3),
                 drop_path_rate: float = 0.1,
                 impl: str = 'fast',
                 **options: Any) -> None:
        classes = implementation(impl, 'RMT')
        settings = resolve_arch(arch, self.arch_zoo, 'RMT', per_stage=self.per_stage_args,
                                optional=self.optional_arch_args)
        dims, depths, heads = settings['embed_dims'], settings['depths'], settings['num_heads']
        super().__init__(len(dims), out_indices, drop_path_rate, **options)
        check_heads_divide_dims(dims, heads, 'RMT')
        check_even_head_dims(dims, heads, 'RMT')
        self.embed_dims = dims

        stem_dims = dims[0] // 2
        norm = lambda channels: build_norm_layer(self.norm_cfg, channels)  # noqa: E731
        self.patch_embed = nn.Module()
        self.patch_embed.proj = classes.stem(
            nn.Conv2d(self.in_channels, stem_dims, 3, 2, 1), norm(stem_dims), nn.GELU(),
            nn.Conv2d(stem_dims, stem_dims, 3, 1, 1), norm(stem_dims), nn.GELU(),
            nn.Conv2d(stem_dims, dims[0], 3, 2, 1), norm(dims[0]), nn.GELU(),
            nn.Conv2d(dims[0], dims[0], 3, 1, 1), norm(dims[0]))

        drop_paths = torch.linspace(0, drop_path_rate, sum(depths), device='cpu').tolist()
        layer_scale_init = settings.get('layer_scale_init', 1e-6)
        self.layers = nn.ModuleList()
        for i, depth in enumerate(depths):
            self.layers.append(RMTStage(
                embed_dims=dims[i], depth=depth, num_heads=heads[i],
                mlp_ratio=settings['mlp_ratios'][i], init_value=settings['init_values'][i],
                heads_range=settings['heads_ranges'][i], decomposed=settings['decomposed'][i],
                drop_paths=drop_paths[sum(depths[:i]):sum(depths[:i + 1])],
                layer_scale=layer_scale_init if settings['layer_scales'][i] else None,
                out_channels=dims[i + 1] if i + 1 < len(dims) else None, norm_cfg=self.norm_cfg,
                with_cp=self.with_cp, implementation=classes))
        self.extra_norms = nn.ModuleDict({str(i): nn.LayerNorm(dims[i]) for i in self.out_indices})
        self._freeze_stages()

    def _frozen_modules(self) -> List[nn.Module]:
        if self.frozen_stages < 0:
            return []
        return [self.patch_embed, *self.layers[:self.frozen_stages], *self.frozen_output_norms()]

    def _init_default_weights(self) -> None:
        init_linears_and_layer_norms(self, partial(trunc_normal_, std=.02))

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        self.check_input(x)
        x = self.patch_embed.proj(x).permute(0, 2, 3, 1)  # (B, h, w, C)
        outs = []
        for i, stage in enumerate(self.layers):
            out, x = stage(x, partial(self.emit, i) if i in self.out_indices else None)
            if out is not None:
                outs.append(out)
        return tuple(outs)

    def attention_input(self, x: torch.Tensor, stage: int, block: int) -> torch.Tensor:
        """The (B, h, w, C) tokens the MaSA of ``block`` of ``stage`` attends over for images ``x``.

        The backbone's forward up to that block, then the block's CPE and
        pre-norm. Call it in eval mode (and under ``torch.no_grad()`` unless
        gradients are wanted), as for inference.

        Raises:
            ValueError: The stage or the block does not exist (or ``x`` is
                not an input :meth:`forward` takes).
        """
        self.check_input(x)
        if not 0 <= stage < len(self.layers):
            raise ValueError(f'RMT: stage {stage} is out of range: the stages are 0-{len(self.layers) - 1}.')
        layer = self.layers[stage]
        if not 0 <= block < len(layer.blocks):
            raise ValueError(f'RMT: block {block} is out of range: stage {stage} has blocks '
                             f'0-{len(layer.blocks) - 1}.')
        x = self.patch_embed.proj(x).permute(0, 2, 3, 1)
        for earlier in self.layers[:stage]:
            x = earlier(x)[1]
        for earlier in layer.blocks[:block]:
            x = earlier(x, layer.Relpos)
        return layer.blocks[block].attention_input(x)

    def attention_maps(self, x: torch.Tensor, stage: int, block: int,
                       query: Optional[Tuple[int, int]] = None) -> AttentionMaps:
        """The decay prior and the attention of every head of a block's MaSA at one query token.

        Args:
            x (torch.Tensor): (B, 3, H, W) images, as :meth:`forward` takes.
            stage (int): The stage, 0-3.
            block (int): The block of the stage.
            query (tuple[int, int], optional): (y, x) of the query token on
                the stage's token grid (stride 4 * 2 ** stage); its centre if None.

        Returns:
            AttentionMaps: ``decay`` (heads, h, w) and ``attention``
            (B, heads, h, w), the weights of the tokens in the query's output.

        Raises:
            ValueError: See :meth:`attention_input`; or the query is outside the grid.
        """
        tokens = self.attention_input(x, stage, block)
        layer = self.layers[stage]
        return query_maps(layer.blocks[block].retention, layer.Relpos, tokens, query)
