"""Our timm classifiers compute the authors' ImageNet classifiers' logits.

The fixture (tests/data/classifier_logits_float64.pt, made by
tests/helpers/make_classifier_goldens.py on qhfan/RMT's and wofmanaf/ResT's
code) holds, for every variant, the authors' float64 logits at 224x224 and
160x192 for weights and an image drawn from seeds
(tests/helpers/classifier_goldens.py); the weights are rebuilt here from the
same seeds, saved as the authors' checkpoint layout under ``model`` and read
by the classifier's ``load_pretrained``, what
``pretrained_cfg_overlay=dict(file=...)`` runs (here into the float64 model;
test_classifier_weights.py checks that path through ``timm.create_model``).
"""
from pathlib import Path

import pytest
import timm
import torch

import mmrmt  # noqa: F401  (registers the timm models)
from helpers.checkpoints import save
from helpers.classifier_goldens import FIXTURE_NAME, IMAGE_SIZES, VARIANT_LAYOUTS, seeded_image, seeded_state_dict
from helpers.rounding import assert_close, two_implementations

#: Two float64 computations (the authors' when the fixture was made, ours now)
#: of at most 1024 steps (RMT-L: 45 blocks of about a dozen steps, the stem
#: and the head), each summing at most 4096 terms (the widest: a 3x3 conv
#: over 448 channels, 4032 terms; the FFN's 1920 hidden channels).
RELATIVE_TOLERANCE = two_implementations(torch.float64, 4096, 1024)

#: In float64 RMT's depthwise convs take torch's slow per-channel path and the
#: larger ResTs cost seconds: these run in `make test` only.
HEAVY = ('rmt_t', 'rmt_s', 'rmt_b', 'rmt_l', 'rmt_s_tl', 'rmt_b_tl', 'rmt_l_tl', 'rest_base', 'rest_large')


@pytest.fixture(scope='module')
def golden(data_dir: Path) -> dict:
    return torch.load(data_dir / FIXTURE_NAME)


def variant_params():
    return [pytest.param(name, marks=pytest.mark.slow) if name in HEAVY else name for name in VARIANT_LAYOUTS]


@pytest.mark.parametrize('variant', variant_params())
def test_logits_equal_the_authors_at_224_and_160x192(golden: dict, variant: str, tmp_path):
    path = save({'model': seeded_state_dict(variant, golden['weight_seed'])}, tmp_path / f'{variant}.pth')
    model = timm.create_model(variant).double().eval()
    model.load_pretrained(str(path))  # what pretrained_cfg_overlay=dict(file=path) runs, here in float64
    for size in IMAGE_SIZES:
        with torch.no_grad():
            logits = model(seeded_image(golden['image_seed'], size))
        expected = golden['logits'][variant][size]
        assert logits.dtype == expected.dtype == torch.float64 and logits.shape == expected.shape == (1, 1000)
        assert_close(logits, expected, RELATIVE_TOLERANCE, msg=f'{variant} at {size}')


def test_the_fixture_covers_every_registered_model_and_size(golden: dict):
    assert sorted(golden['logits']) == sorted(VARIANT_LAYOUTS) == sorted(timm.list_models(['rmt*', 'rest*']))
    assert all(sorted(sizes) == sorted(IMAGE_SIZES) for sizes in golden['logits'].values())
