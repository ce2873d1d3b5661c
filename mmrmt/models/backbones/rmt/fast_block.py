"""RMT's block and stem in their fast forms: same parameters, lean residuals, CPU image chunks."""
from typing import Optional

import torch
from torch import nn

from ...layers import in_image_chunks, run_mode
from .block import RMTBlock, layer_scaled
from .fast_relative_position import FastManhattanRelPos


class FastRMTBlock(RMTBlock):
    """:class:`.block.RMTBlock` of the fast MaSA and FFN, computed leanly.

    The pre-norms are fused into the projections after them (their outputs
    recomputed in backward), the CPE's residual is folded into its kernel;
    without autograd the residual sums are written into the branch outputs,
    and in CPU inference the block runs on a few images at a time (see
    :func:`.image_chunks.in_image_chunks`, by its FFN hidden map). Same
    arguments and parameters as the reference; its ``implementation`` must
    be the fast one (the MaSA and FFN take the pre-norms, the CPE its
    residual).
    """

    def forward(self, x: torch.Tensor, relpos: FastManhattanRelPos) -> torch.Tensor:
        """The block on channels-last (B, h, w, C) ``x``."""
        hidden_bytes = x.shape[1] * x.shape[2] * self.ffn.fc1.out_features * x.element_size()
        return in_image_chunks(lambda part: self._forward(part, relpos), x, hidden_bytes, self.training)

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
        if not run_mode.keeps_autograd() and branch.dtype == x.dtype:
            return branch.add_(x)
        return x + branch


class ImageChunkedStem(nn.Sequential):
    """The stem, on a few images at a time in CPU inference (see :func:`.image_chunks.in_image_chunks`, by
    its first map).

    In eval mode BatchNorm uses its running statistics, so every image is
    computed on its own; in train mode the whole batch goes through at once.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        first_map_bytes = self[0].out_channels * -(-x.shape[2] // 2) * -(-x.shape[3] // 2) * x.element_size()
        return in_image_chunks(super().forward, x, first_map_bytes, self.training)
