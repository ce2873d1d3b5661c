"""Seeded weights and images of the classifier fixtures (tests/data/classifier_logits_float64.pt).

The fixture holds only seeds and the authors' logits: the weights of each
variant are rebuilt here from its seed over the upstream checkpoint layout
(tests/data/upstream_checkpoint_layouts.txt), by the fixture's generator
(tests/helpers/make_classifier_goldens.py, run on the authors' code) and by
the tests (on ours) alike. Every tensor is drawn at a scale that keeps the
network's activations of unit order (weights ~ N(0, 1/fan_in), norms'
scales ~ 1 + N(0, 0.1^2)), so that every layer matters to the logits.
"""
from typing import Dict, Tuple

import torch

from .upstream_layouts import upstream_layouts

FIXTURE_NAME = 'classifier_logits_float64.pt'

#: Our timm model name -> the upstream layout (and whether the token-labelled
#: ``aux_head`` is added to it).
VARIANT_LAYOUTS = dict(rmt_t=('rmt-t', False), rmt_s=('rmt-s', False), rmt_b=('rmt-b', False),
                       rmt_l=('rmt-l', False), rmt_s_tl=('rmt-s', True), rmt_b_tl=('rmt-b', True),
                       rmt_l_tl=('rmt-l', True), rest_lite=('rest-lite', False), rest_small=('rest-small', False),
                       rest_base=('rest-base', False), rest_large=('rest-large', False))

#: The (H, W) sizes of the fixtures' images: the authors' 224 and a smaller non-square one.
IMAGE_SIZES = ((224, 224), (160, 192))


def layout(variant: str) -> Dict[str, Tuple[int, ...]]:
    """Every key and shape of ``variant``'s ImageNet checkpoint (with ``aux_head`` if token-labelled)."""
    name, token_label = VARIANT_LAYOUTS[variant]
    shapes = dict(upstream_layouts()[name])
    if token_label:
        classes, _ = shapes['head.weight']
        shapes['aux_head.weight'] = (classes, shapes['proj.weight'][1])
        shapes['aux_head.bias'] = (classes, )
    return shapes


def seeded_tensor(key: str, shape: Tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    """The float64 value of checkpoint tensor ``key`` drawn from ``generator``, by its role."""
    def normal(*size):
        return torch.randn(size, generator=generator, dtype=torch.float64)

    def uniform(low, high, *size):
        return low + (high - low) * torch.rand(size, generator=generator, dtype=torch.float64)

    if key.endswith('num_batches_tracked'):
        return torch.zeros(shape, dtype=torch.int64)
    if key.endswith('running_var'):
        return uniform(0.5, 1.5, *shape)
    if key.endswith('running_mean'):
        return 0.1 * normal(*shape)
    if key.endswith('Relpos.angle'):  # the rotary frequencies, one per pair of channels
        return uniform(0., 1., shape[0] // 2).repeat_interleave(2)
    if key.endswith('Relpos.decay'):  # a log-decay per head, in (-0.61, -0.01)
        return -uniform(0.01, 0.61, *shape)
    if len(shape) >= 2:  # linear and conv weights
        return normal(*shape) / torch.Size(shape[1:]).numel() ** 0.5
    if key.endswith('bias'):
        return 0.1 * normal(*shape)
    return 1 + 0.1 * normal(*shape)  # norm scales and layer scales


def seeded_state_dict(variant: str, seed: int) -> Dict[str, torch.Tensor]:
    """``variant``'s checkpoint in the upstream layout, every tensor drawn from ``seed`` (float64)."""
    generator = torch.Generator().manual_seed(seed)
    return {key: seeded_tensor(key, shape, generator) for key, shape in layout(variant).items()}


def seeded_image(seed: int, size: Tuple[int, int]) -> torch.Tensor:
    """A (1, 3, H, W) float64 image of standard-normal values (a normalised image's scale)."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn((1, 3, *size), generator=generator, dtype=torch.float64)
