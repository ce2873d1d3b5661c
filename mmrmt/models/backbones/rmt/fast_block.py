"""RMT's block, stage and stem in their fast forms: same parameters, lean residuals, CPU image chunks."""
from typing import Callable, Optional

import torch
from torch import nn

from ...layers import is_exporting
from .block import RMTBlock, RMTStage, layer_scaled
from .fast_attention import FastManhattanSelfAttention
from .fast_ffn import FastConvFFN
from .fast_relative_position import FastManhattanRelPos

#: CPU inference runs the stem and each block on a few images at a time, so
#: that the largest map of a chunk stays under this many bytes: large fresh
#: tensors cost page faults on every allocation, small ones come back from the
#: heap and stay in cache.
INFERENCE_CHUNK_BYTES = 8 * 2**20


def in_image_chunks(function: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                    bytes_per_image: int) -> torch.Tensor:
    """``function(x)``; in CPU inference on as many images at a time as fit :data:`INFERENCE_CHUNK_BYTES`.

    Only for functions that treat the images of a batch independently. With
    autograd, off the CPU, or exported (one graph for any batch): the whole
    batch at once.
    """
    if torch.is_grad_enabled() or x.device.type != 'cpu' or is_exporting():
        return function(x)
    step = max(1, INFERENCE_CHUNK_BYTES // bytes_per_image)
    if step >= x.shape[0]:
        return function(x)
    return torch.cat([function(part) for part in x.split(step)])


class FastRMTBlock(RMTBlock):
    """:class:`.block.RMTBlock` with the fast MaSA and FFN, computed leanly.

    The pre-norms are fused into the projections after them (their outputs
    recomputed in backward), the CPE's residual is folded into its kernel;
    without autograd the residual sums are written into the branch outputs,
    and on CPU the block runs on a few images at a time (see
    :func:`in_image_chunks`). Same arguments and parameters as the reference.
    """

    attention_cls = FastManhattanSelfAttention
    ffn_cls = FastConvFFN

    def forward(self, x: torch.Tensor, relpos: FastManhattanRelPos) -> torch.Tensor:
        """The block on channels-last (B, h, w, C) ``x``."""
        hidden_bytes = x.shape[1] * x.shape[2] * self.ffn.fc1.out_features * x.element_size()
        return in_image_chunks(lambda part: self._forward(part, relpos), x, hidden_bytes)

    def _forward(self, x: torch.Tensor, relpos: FastManhattanRelPos) -> torch.Tensor:
        x = self.add_position(x)
        x = self._add_branch(x, self.retention(x, relpos, self.retention_layer_norm), self.gamma_1)
        return self._add_branch(x, self.ffn(x, self.final_layer_norm), self.gamma_2)

    def add_position(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` plus its CPE, the residual folded into the conv's kernel."""
        return self.pos.forward_residual(x)

    def _add_branch(self, x: torch.Tensor, branch: torch.Tensor,
                    gamma: Optional[torch.Tensor]) -> torch.Tensor:
        """x + drop_path(gamma * branch); without autograd summed into the branch's tensor."""
        branch = self.drop_path(layer_scaled(branch, gamma))
        if not torch.is_grad_enabled() and branch.dtype == x.dtype:
            return branch.add_(x)
        return x + branch


class FastRMTStage(RMTStage):
    """:class:`.block.RMTStage` of fast blocks sharing cached tables."""

    relpos_cls = FastManhattanRelPos
    block_cls = FastRMTBlock


class ImageChunkedStem(nn.Sequential):
    """The stem, on a few images at a time in CPU inference while in eval mode.

    In eval mode BatchNorm uses its running statistics, so every image is
    computed on its own; in train mode the whole batch goes through at once.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            return super().forward(x)
        first_map_bytes = self[0].out_channels * -(-x.shape[2] // 2) * -(-x.shape[3] // 2) * x.element_size()
        return in_image_chunks(super().forward, x, first_map_bytes)
