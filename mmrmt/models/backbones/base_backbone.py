"""Behaviour every mmrmt backbone shares: outputs, freezing, norm_eval, loading."""
from typing import List, Optional, Sequence, Tuple, Union

import torch
from mmengine.model import BaseModule
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.utils.checkpoint import checkpoint

from mmrmt.checkpoint import load_pretrained


class PyramidBackbone(BaseModule):
    """Base class of the backbones: everything but the network itself.

    A subclass builds its modules, then calls :meth:`_freeze_stages`, and
    implements :meth:`_frozen_modules` (what ``frozen_stages=k`` stops) and
    :meth:`_init_default_weights`. The LayerNorm of each emitted stage is
    :meth:`output_norm` (``extra_norms[str(stage)]`` unless overridden);
    :meth:`_frozen_modules` lists those of frozen stages with
    :meth:`frozen_output_norms`. It sets the class attributes
    ``dropped_checkpoint_prefixes`` (classifier keys of ImageNet files) and
    ``new_checkpoint_prefixes`` (its keys that such files cannot have).

    Args:
        in_channels (int): Channels of the input images.
        num_stages (int): Number of stages (levels) the backbone can emit.
        out_indices (Sequence[int]): Stages whose features are returned.
        frozen_stages (int): -1 freezes nothing, 0 the stem, k the stem and
            the first k stages (their parameters stop learning and their
            norm layers stay in eval mode).
        norm_eval (bool): Keep BatchNorm layers in eval mode while training.
        with_cp (bool): Trade compute for memory with activation checkpointing.
        init_cfg (dict, optional): ``dict(type='Pretrained', checkpoint=...)``
            loads an upstream ImageNet checkpoint; ``prefix`` may select a
            sub-module of a bigger checkpoint.
    """

    dropped_checkpoint_prefixes: Tuple[str, ...] = ()
    new_checkpoint_prefixes: Tuple[str, ...] = ()

    def __init__(self,
                 in_channels: int,
                 num_stages: int,
                 out_indices: Sequence[int],
                 frozen_stages: int,
                 norm_eval: bool,
                 with_cp: bool,
                 init_cfg: Optional[Union[dict, List[dict]]] = None) -> None:
        super().__init__(init_cfg=init_cfg)
        name = type(self).__name__
        if isinstance(out_indices, int):
            out_indices = (out_indices, )
        out_indices = tuple(index % num_stages if -num_stages <= index < 0 else index
                            for index in out_indices)
        bad = [index for index in out_indices if not 0 <= index < num_stages]
        if bad or not out_indices or len(set(out_indices)) != len(out_indices):
            raise ValueError(f'{name}: out_indices must be distinct stage indices in '
                             f'[0, {num_stages - 1}], got {tuple(out_indices)}.')
        if not -1 <= frozen_stages <= num_stages:
            raise ValueError(f'{name}: frozen_stages must be in [-1, {num_stages}], '
                             f'got {frozen_stages}.')
        if init_cfg is not None and (not isinstance(init_cfg, dict)
                                     or init_cfg.get('type') != 'Pretrained'):
            raise ValueError(f"{name}: init_cfg must be dict(type='Pretrained', "
                             f"checkpoint=PATH) or None, got {init_cfg!r}.")
        self.in_channels = in_channels
        self.num_stages = num_stages
        self.out_indices = tuple(sorted(out_indices))
        self.frozen_stages = frozen_stages
        self.norm_eval = norm_eval
        self.with_cp = with_cp

    # --- to be provided by subclasses ---------------------------------------
    def _frozen_modules(self) -> List[nn.Module]:
        """The modules ``frozen_stages`` stops, stem first."""
        raise NotImplementedError

    def _init_default_weights(self) -> None:
        """Initialise from scratch (no pretrained checkpoint)."""
        raise NotImplementedError

    # --- shared behaviour ---------------------------------------------------
    def output_norm(self, stage: int) -> nn.Module:
        """The LayerNorm applied to the emitted feature of ``stage``."""
        return self.extra_norms[str(stage)]

    def frozen_output_norms(self) -> List[nn.Module]:
        """Output norms of the frozen stages, for :meth:`_frozen_modules`."""
        return [self.output_norm(i) for i in self.out_indices if i < self.frozen_stages]

    def emit(self, stage: int, x: torch.Tensor) -> torch.Tensor:
        """Normalise a channels-last (B, h, w, C) stage output; return (B, C, h, w)."""
        return self.output_norm(stage)(x).permute(0, 3, 1, 2).contiguous()

    def check_input(self, x: torch.Tensor) -> None:
        """Fail clearly when the input is not (B, in_channels, H, W)."""
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f'{type(self).__name__} expects (B, {self.in_channels}, H, W) '
                             f'inputs (in_channels={self.in_channels}), got {tuple(x.shape)}.')

    def run_block(self, block: nn.Module, *args) -> torch.Tensor:
        """Call ``block``, through activation checkpointing when ``with_cp``."""
        if self.with_cp and self.training and torch.is_grad_enabled():
            return checkpoint(block, *args, use_reentrant=False)
        return block(*args)

    def _freeze_stages(self) -> None:
        for module in self._frozen_modules():
            module.eval()
            for param in module.parameters():
                param.requires_grad = False

    def train(self, mode: bool = True) -> 'PyramidBackbone':
        """Switch mode, keeping frozen stages and (with norm_eval) BN in eval."""
        super().train(mode)
        self._freeze_stages()
        if mode and self.norm_eval:
            for module in self.modules():
                if isinstance(module, _BatchNorm):
                    module.eval()
        return self

    def init_weights(self) -> None:
        """Load the ``Pretrained`` checkpoint of ``init_cfg``, or initialise."""
        if self.init_cfg is None:
            self._init_default_weights()
        else:
            load_pretrained(
                self,
                self.init_cfg['checkpoint'],
                dropped_prefixes=self.dropped_checkpoint_prefixes,
                new_prefixes=self.new_checkpoint_prefixes,
                prefix=self.init_cfg.get('prefix', ''),
                convert=self.convert_checkpoint,
                before_load=self._init_default_weights)
        self._is_init = True

    @staticmethod
    def convert_checkpoint(state_dict: dict) -> dict:
        """Adapt a checkpoint's layout to this backbone's; identity by default."""
        return state_dict
