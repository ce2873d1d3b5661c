"""RMT's ImageNet classifiers for timm: ``rmt_t/s/b/l`` and the token-labelled ``rmt_s/b/l_tl``.

The network is our :class:`~mmrmt.models.backbones.RMT` (the same blocks and
fast paths) without its output norms, then the authors' head
(``classfication_release/RMT.py``): a linear projection of every token to
1024 channels, BatchNorm, swish, average pooling and the linear classifier.
The token-labelled models (``classification_token_label_release``, the
authors' RMT-S*/B*/L*) add ``aux_head``, a classifier of every last-stage
token, and predict ``head + 0.5 * max over tokens of aux_head``, as the
authors evaluate them (their MixToken training is not reproduced: the same
sum is the output in training).
"""
from typing import List, Union

import torch
import torch.nn.functional as F
from timm.models import generate_default_cfgs, register_model
from torch import nn

from ..backbones import RMT
from .timm_classifier import TimmClassifierMixin, feature_info, model_entry, pretrained_cfg


class RMTClassifier(TimmClassifierMixin, RMT):
    """RMT with the authors' ImageNet head, a timm model (see :mod:`.timm_classifier`).

    Args:
        arch (str | dict): As :class:`RMT`'s: 't', 's', 'b', 'l' or a dict.
        num_classes (int): Classes; 0 for none (the pooled 1024 features).
            Defaults to 1000.
        in_chans (int): Image channels. Defaults to 3.
        global_pool (str): 'avg', or '' (no pooling, with num_classes=0).
            Defaults to 'avg'.
        drop_rate (float): Dropout before the classifier. Defaults to 0.
        drop_path_rate (float): Stochastic depth rate. Defaults to 0.
        projection (int): Channels of the head's projection. Defaults to 1024.
        token_label (bool): Add the per-token ``aux_head`` of the authors'
            token-labelled models. Defaults to False.
        impl (str): 'fast' or 'reference', as :class:`RMT`'s.
    """

    def __init__(self,
                 arch: Union[str, dict] = 't',
                 num_classes: int = 1000,
                 in_chans: int = 3,
                 global_pool: str = 'avg',
                 drop_rate: float = 0.,
                 drop_path_rate: float = 0.,
                 projection: int = 1024,
                 token_label: bool = False,
                 impl: str = 'fast') -> None:
        super().__init__(arch, in_channels=in_chans, out_indices=(-1, ), drop_path_rate=drop_path_rate, impl=impl)
        self.extra_norms = nn.ModuleDict()  # the authors' head reads the last stage's tokens as they are
        self.num_classes = num_classes
        self.global_pool = self.check_global_pool(global_pool, num_classes)
        self.num_features = self.embed_dims[-1]
        self.head_hidden_size = projection
        self.token_label = token_label
        self.feature_info = feature_info(self.embed_dims, [f'layers.{i}' for i in range(self.num_stages)])
        self.proj = nn.Linear(self.num_features, projection)
        self.norm = nn.BatchNorm2d(projection)
        self.head_drop = nn.Dropout(drop_rate)
        self.reset_classifier(num_classes)
        self._init_default_weights()

    @property
    def classifier_prefixes(self):
        return ('head.', 'aux_head.') if self.token_label else ('head.', )

    def reset_classifier(self, num_classes: int, global_pool: str = None) -> None:
        """A new (initialised) classifier of ``num_classes`` (0: none), and the pooling if given."""
        if global_pool is not None:
            self.global_pool = self.check_global_pool(global_pool, num_classes)
        self.num_classes = num_classes
        self.head = nn.Linear(self.head_hidden_size, num_classes) if num_classes else nn.Identity()
        if self.token_label:
            self.aux_head = nn.Linear(self.num_features, num_classes) if num_classes else nn.Identity()
        for head in (self.head, getattr(self, 'aux_head', None)):
            if isinstance(head, nn.Linear):
                nn.init.trunc_normal_(head.weight, std=.02)
                nn.init.zeros_(head.bias)

    def stage_outputs(self, x: torch.Tensor, last: int) -> List[torch.Tensor]:
        x = self.patch_embed.proj(x).permute(0, 2, 3, 1)
        outs = []
        for stage in self.layers[:last + 1]:
            out, x = stage(x, lambda tokens: tokens)
            outs.append(out)
        return outs

    def forward_head(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        """Logits (or with ``pre_logits`` the pooled projection) of a :meth:`forward_features` map."""
        tokens = x.permute(0, 2, 3, 1)  # (B, h, w, C)
        features = F.silu(self.norm(self.proj(tokens).permute(0, 3, 1, 2)))  # (B, projection, h, w)
        if not self.global_pool:
            return features
        pooled = features.flatten(2).mean(dim=2)
        if pre_logits:
            return pooled
        logits = self.head(self.head_drop(pooled))
        if self.token_label and self.num_classes:
            logits = logits + 0.5 * self.aux_head(tokens.flatten(1, 2)).amax(dim=1)
        return logits


def _cfg(**settings) -> dict:
    """The authors' evaluation (``classfication_release/datasets.py``): resize to 256/224, centre crop, bicubic."""
    return pretrained_cfg(**{**dict(crop_pct=0.875, interpolation='bicubic', first_conv='patch_embed.proj.0',
                                    classifier='head', license='unknown', origin_url='https://github.com/qhfan/RMT',
                                    paper_ids='arXiv:2309.11523',
                                    paper_name='RMT: Retentive Networks Meet Vision Transformers'), **settings})


_TOKEN_LABEL = dict(classifier=('head', 'aux_head'),
                    notes=('token labelling (the authors\' RMT-S*/B*/L*): logits are head + 0.5 max aux_head', ))

#: The authors' variants: model name -> RMTClassifier arguments.
VARIANTS = dict(rmt_t=dict(arch='t'), rmt_s=dict(arch='s'), rmt_b=dict(arch='b'), rmt_l=dict(arch='l'),
                rmt_s_tl=dict(arch='s', token_label=True), rmt_b_tl=dict(arch='b', token_label=True),
                rmt_l_tl=dict(arch='l', token_label=True))

default_cfgs = generate_default_cfgs({
    f'{name}.in1k': _cfg(**(_TOKEN_LABEL if arguments.get('token_label') else {}))
    for name, arguments in VARIANTS.items()})

for _name, _arguments in VARIANTS.items():
    register_model(model_entry(RMTClassifier, _name, **_arguments))
