"""Every model-zoo config builds, and its model has the papers' parameter count.

Paper counts (millions) are checked within max(2 %, 0.6M); configs without a
paper number have their exact count pinned.
"""
from pathlib import Path
from typing import Dict, Tuple

import pytest

from zoo_configs import build_model, count_parameters, load_config, skip_parameter_init, zoo_config_paths

# (params in millions, source) as reported by the authors.
PAPER_PARAMS: Dict[str, Tuple[float, str]] = {
    'retinanet_rmt-t_fpn_1x_coco': (23, 'RMT Table 2'),
    'retinanet_rmt-s_fpn_1x_coco': (36, 'RMT Table 2'),
    'retinanet_rmt-b_fpn_1x_coco': (63, 'RMT Table 2'),
    'retinanet_rmt-l_fpn_1x_coco': (104, 'RMT Table 2'),
    'mask-rcnn_rmt-t_fpn_1x_coco': (33, 'RMT Table 2'),
    'mask-rcnn_rmt-s_fpn_1x_coco': (46, 'RMT Table 2'),
    'mask-rcnn_rmt-b_fpn_1x_coco': (73, 'RMT Table 2'),
    'mask-rcnn_rmt-l_fpn_1x_coco': (114, 'RMT Table 2'),
    'mask-rcnn_rmt-s_fpn_ms-3x_coco': (46, 'RMT Table 3'),
    'mask-rcnn_rmt-b_fpn_ms-3x_coco': (73, 'RMT Table 3'),
    'cascade-mask-rcnn_rmt-s_fpn_ms-3x_coco': (83, 'RMT Table 4'),
    'cascade-mask-rcnn_rmt-b_fpn_ms-3x_coco': (111, 'RMT Table 4'),
    'fpn_rmt-t_8xb2-80k_ade20k-512x512': (17.0, 'RMT Table 5'),
    'fpn_rmt-s_8xb2-80k_ade20k-512x512': (30, 'RMT Table 5'),
    'fpn_rmt-b_8xb2-80k_ade20k-512x512': (57, 'RMT Table 5'),
    'fpn_rmt-l_8xb2-80k_ade20k-512x512': (98, 'RMT Table 5'),
    'upernet_rmt-s_8xb2-160k_ade20k-512x512': (56, 'RMT Table 5'),
    'upernet_rmt-b_8xb2-160k_ade20k-512x512': (83, 'RMT Table 5'),
    'upernet_rmt-l_8xb2-160k_ade20k-512x512': (125, 'RMT Table 5'),
    'retinanet_rest-small_fpn_ms-1x_coco': (23.4, 'ResT Table 3'),
    'retinanet_rest-base_fpn_ms-1x_coco': (40.5, 'ResT Table 3'),
    'retinanet_rest-large_fpn_ms-1x_coco': (61.8, 'ResT Table 3'),
    'mask-rcnn_rest-small_fpn_ms-1x_coco': (33.3, 'ResT Table 4'),
    'mask-rcnn_rest-base_fpn_ms-1x_coco': (49.8, 'ResT Table 4'),
}

# Exact counts of the configs no paper reports (the 160k Semantic FPN ones
# equal their 80k counterparts, which the paper reports).
PINNED_PARAMS: Dict[str, int] = {
    'mask-rcnn_rmt-t_fpn_ms-3x_coco': 32934800,
    'mask-rcnn_rmt-l_fpn_ms-3x_coco': 114054088,
    'cascade-mask-rcnn_rmt-t_fpn_ms-3x_coco': 70770002,
    'cascade-mask-rcnn_rmt-l_fpn_ms-3x_coco': 151889290,
    'fpn_rmt-t_8xb2-160k_ade20k-512x512': 17034038,
    'fpn_rmt-s_8xb2-160k_ade20k-512x512': 29667062,
    'fpn_rmt-b_8xb2-160k_ade20k-512x512': 56883614,
    'fpn_rmt-l_8xb2-160k_ade20k-512x512': 98153326,
    'upernet_rmt-t_8xb2-160k_ade20k-512x512': 43091404,
    'mask-rcnn_rest-large_fpn_ms-1x_coco': 71182404,
    'upernet_rest-small_4xb4-160k_ade20k-512x512': 43475232,
    'upernet_rest-base_4xb4-160k_ade20k-512x512': 61980560,
    'upernet_rest-large_4xb4-160k_ade20k-512x512': 83329664,
    'retinanet_resmlp-12_fpn_1x_coco': 25562596,
    'retinanet_resmlp-24_fpn_1x_coco': 40232404,
    'mask-rcnn_resmlp-12_fpn_1x_coco': 37038816,
    'mask-rcnn_resmlp-24_fpn_1x_coco': 51708624,
    'upernet_resmlp-12_4xb4-160k_ade20k-512x512': 46851356,
    'upernet_resmlp-24_4xb4-160k_ade20k-512x512': 61521164,
}

CONFIGS = zoo_config_paths()


def test_every_config_has_one_expected_count():
    names = {path.stem for path in CONFIGS}
    assert not set(PAPER_PARAMS) & set(PINNED_PARAMS)
    assert names == set(PAPER_PARAMS) | set(PINNED_PARAMS), (
        f'configs without an expected count: {sorted(names - set(PAPER_PARAMS) - set(PINNED_PARAMS))}; '
        f'expected counts without a config: {sorted(set(PAPER_PARAMS) | set(PINNED_PARAMS) - names)}')


@pytest.mark.parametrize('path', CONFIGS, ids=lambda path: path.stem)
def test_config_model_parameter_count(path: Path):
    cfg = load_config(path)
    with skip_parameter_init():
        params = count_parameters(build_model(cfg))
    if path.stem in PAPER_PARAMS:
        paper, source = PAPER_PARAMS[path.stem]
        tolerance = max(0.02 * paper, 0.6)
        assert abs(params / 1e6 - paper) <= tolerance, (
            f'{path.stem}: {params / 1e6:.2f}M parameters, {source} reports {paper}M '
            f'(tolerance {tolerance:.2f}M)')
    else:
        assert params == PINNED_PARAMS[path.stem]
