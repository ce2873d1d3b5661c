"""ResT as the spec states it, step by step: the oracle of the fast backbone.

Every op of the spec (the project's ResT spec and its method card) is written
out plainly on (B, N, C) token sequences: materialised score maps, the 1x1
head-mixing conv, ``softmax`` and ``nn.InstanceNorm2d``, ``x * sigmoid(conv(x))``
gates, timm's GELU MLP, explicit residual sums. Nothing is fused, recomputed
or chunked. The stem and the patch embeddings (convs, BN, the positional
gate) are the backbone's own modules: they have no fast form to check. The
parameter names are the backbone's (and the upstream checkpoints'), so one
state dict loads into both; it emits, like
``ResT(arch)`` with the default ``out_indices``, every stage's output after
its output norm, as (B, C, h, w).

It is the tests' oracle only: the benchmark times the backbone against the
authors' code (``tools/analysis_tools/benchmark.py --upstream-repo``), which
computes the same steps.
"""
from typing import List, Tuple

import torch
from torch import nn

from mmrmt.models.backbones.arch import resolve_arch
from mmrmt.models.backbones.rest import ConvPatchEmbed, ConvStem, EfficientMultiHeadAttention, ResT


class ReferenceAttention(EfficientMultiHeadAttention):
    """EMSA on (B, N, C) tokens of an (H, W) grid, with materialised (B, heads, N, N') maps.

    The parameters are the backbone's attention's (its constructor); the
    forward is the spec's, written out.
    """

    def __init__(self, dims: int, heads: int, sr_ratio: int) -> None:
        super().__init__(dims, heads, sr_ratio)
        if heads > 1:
            self.transform_norm = nn.InstanceNorm2d(heads)

    def forward(self, x: torch.Tensor, height: int, width: int) -> torch.Tensor:
        batch, length, dims = x.shape
        q = self.q(x).reshape(batch, length, self.num_heads, -1).permute(0, 2, 1, 3)
        if self.sr_ratio > 1:
            grid = x.transpose(1, 2).reshape(batch, dims, height, width)
            x = self.sr_norm(self.sr(grid).flatten(2).transpose(1, 2))
        kv = self.kv(x).reshape(batch, -1, 2, self.num_heads, dims // self.num_heads).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        if self.num_heads > 1:
            attn = self.transform_norm(self.transform_conv(attn).softmax(dim=-1))
        else:
            attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(batch, length, dims))


class ReferenceMlp(nn.Module):
    """fc1, exact GELU, fc2."""

    def __init__(self, dims: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dims, hidden)
        self.fc2 = nn.Linear(hidden, dims)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class ReferenceBlock(nn.Module):
    """x + attn(norm1(x)), then x + mlp(norm2(x)) (no drop path: the reference is deterministic)."""

    def __init__(self, dims: int, heads: int, mlp_ratio: float, sr_ratio: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dims)
        self.attn = ReferenceAttention(dims, heads, sr_ratio)
        self.norm2 = nn.LayerNorm(dims)
        self.mlp = ReferenceMlp(dims, int(dims * mlp_ratio))

    def forward(self, x: torch.Tensor, height: int, width: int) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), height, width)
        return x + self.mlp(self.norm2(x))


class ReferenceResT(nn.Module):
    """ResT, step by step, with the backbone's parameter names and outputs.

    Args:
        arch (str | dict): As :class:`mmrmt.models.ResT`'s ``arch``.
        in_channels (int): Image channels.
    """

    def __init__(self, arch='small', in_channels: int = 3) -> None:
        super().__init__()
        settings = resolve_arch(arch, ResT.arch_zoo, 'ResT', per_stage=ResT.per_stage_args,
                                optional=ResT.optional_arch_args)
        dims = settings['embed_dims']
        self.num_stages = len(dims)
        self.stem = ConvStem(in_channels, dims[0], dict(type='BN'))
        for i in range(1, self.num_stages):
            self.add_module(f'patch_embed_{i + 1}', ConvPatchEmbed(dims[i - 1], dims[i], dict(type='BN')))
        for i, depth in enumerate(settings['depths']):
            self.add_module(f'stage{i + 1}', nn.ModuleList(
                ReferenceBlock(dims[i], settings['num_heads'][i], settings['mlp_ratios'][i],
                               settings['sr_ratios'][i]) for _ in range(depth)))
        self.norm = nn.LayerNorm(dims[-1])
        self.extra_norms = nn.ModuleDict({str(i): nn.LayerNorm(dims[i]) for i in range(self.num_stages - 1)})

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        outs: List[torch.Tensor] = []
        for i in range(self.num_stages):
            x = self.stem(x) if i == 0 else getattr(self, f'patch_embed_{i + 1}')(x)
            batch, dims, height, width = x.shape  # the grid is the conv's output
            x = x.flatten(2).transpose(1, 2)
            for block in getattr(self, f'stage{i + 1}'):
                x = block(x, height, width)
            norm = self.norm if i == self.num_stages - 1 else self.extra_norms[str(i)]
            outs.append(norm(x).transpose(1, 2).reshape(batch, dims, height, width))
            x = x.transpose(1, 2).reshape(batch, dims, height, width)
        return tuple(outs)
