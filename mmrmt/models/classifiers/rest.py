"""ResT's ImageNet classifiers for timm: ``rest_lite/small/base/large``.

The network is our :class:`~mmrmt.models.backbones.ResT` (the same blocks
and fast paths), its last stage normalised by ``norm``, then the authors'
head (``models/rest.py``): average pooling and a linear classifier.
"""
from typing import List, Optional

import torch
from timm.models import generate_default_cfgs, register_model
from torch import nn

from ..backbones import ResT
from .timm_classifier import TimmClassifierMixin, feature_info, model_entry, pretrained_cfg


class ResTClassifier(TimmClassifierMixin, ResT):
    """ResT with the authors' ImageNet head, a timm model (see :mod:`.timm_classifier`).

    Args:
        arch (str | dict): As :class:`ResT`'s: 'lite', 'small', 'base', 'large' or a dict.
        num_classes, in_chans, global_pool, drop_rate, drop_path_rate: timm's
            arguments, as :class:`.RMTClassifier` takes them (``num_classes=0``:
            the pooled ``num_features``).
    """

    def __init__(self,
                 arch: str = 'small',
                 num_classes: int = 1000,
                 in_chans: int = 3,
                 global_pool: str = 'avg',
                 drop_rate: float = 0.,
                 drop_path_rate: float = 0.) -> None:
        super().__init__(arch, in_channels=in_chans, out_indices=(-1, ), drop_path_rate=drop_path_rate)
        self.num_classes = num_classes
        self.global_pool = self.check_global_pool(global_pool, num_classes)
        self.num_features = self.head_hidden_size = self.embed_dims[-1]
        self.feature_info = feature_info(self.embed_dims, [f'stage{i + 1}' for i in range(self.num_stages)])
        self.head_drop = nn.Dropout(drop_rate)
        self.reset_classifier(num_classes)
        self._init_default_weights()

    def reset_classifier(self, num_classes: int, global_pool: Optional[str] = None) -> None:
        """A new (initialised) classifier of ``num_classes`` (0: none), and the pooling if given."""
        if global_pool is not None:
            self.global_pool = self.check_global_pool(global_pool, num_classes)
        self.num_classes = num_classes
        self.head = nn.Linear(self.num_features, num_classes) if num_classes else nn.Identity()
        if num_classes:
            nn.init.trunc_normal_(self.head.weight, std=.02)
            nn.init.zeros_(self.head.bias)

    def final_norm(self) -> nn.Module:
        return self.norm

    def stage_outputs(self, x: torch.Tensor, last: int) -> List[torch.Tensor]:
        return self.stage_maps(x, last, lambda stage, out: out)

    def forward_head(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        """Logits (or with ``pre_logits`` the pooled features) of a :meth:`forward_features` map."""
        if not self.global_pool:
            return x
        pooled = x.flatten(2).mean(dim=2)
        return pooled if pre_logits else self.head(self.head_drop(pooled))


def _cfg() -> dict:
    """The authors' evaluation (``main.py``'s crop_pct 1.0: resize to 224, centre crop), bicubic."""
    return pretrained_cfg(crop_pct=1.0, interpolation='bicubic', first_conv='stem.conv1', classifier='head',
                          license='apache-2.0', origin_url='https://github.com/wofmanaf/ResT',
                          paper_ids='arXiv:2105.13677',
                          paper_name='ResT: An Efficient Transformer for Visual Recognition')


#: The authors' variants: model name -> ResTClassifier arguments.
VARIANTS = dict(rest_lite=dict(arch='lite'), rest_small=dict(arch='small'), rest_base=dict(arch='base'),
                rest_large=dict(arch='large'))

default_cfgs = generate_default_cfgs({f'{name}.in1k': _cfg() for name in VARIANTS})

for _name, _arguments in VARIANTS.items():
    register_model(model_entry(ResTClassifier, _name, **_arguments))
