"""The authors' trained detectors (mmdet 2.x) and segmentors (mmseg 0.x) in our configs' models: a file in the
upstream layout holding a model's weights (helpers/upstream_trained_models.py), converted by
``convert_upstream_trained``, loads into our config's model strictly and gives the outputs of the model whose
weights it holds (the converter script's runs: tests/tools/test_upstream_trained.py)."""
import pytest
import torch
from mmengine.config import Config

from mmrmt.checkpoint import specs
from helpers.tool_modules import REPO, import_tool
from helpers.upstream_trained_models import (MMDET2, MMSEG0, build_model, dataset_classes, trained_like_model,
                                             write_upstream_file)

get_flops = import_tool('tools/analysis_tools/get_flops.py')
converter = import_tool('tools/model_converters/rmt_upstream_trained_to_mmrmt.py')
convert_upstream_trained, check_class_names = converter.convert_upstream_trained, converter.check_class_names
pytestmark = pytest.mark.slow  # five zoo models built, twice each

UNUSED_STAGE_1_NORM = {'backbone.extra_norms.0.weight', 'backbone.extra_norms.0.bias'}
MODELS = [  # our config, the upstream version, the keys conversion drops
    ('retinanet_rmt-t_fpn_1x_coco.py', MMDET2, UNUSED_STAGE_1_NORM),
    ('mask-rcnn_rmt-t_fpn_1x_coco.py', MMDET2, set()),
    ('cascade-mask-rcnn_rmt-t_fpn_ms-3x_coco.py', MMDET2, set()),
    ('upernet_rmt-t_8xb2-160k_ade20k-512x512.py', MMSEG0, set()),
    ('fpn_rmt-t_8xb2-80k_ade20k-512x512.py', MMSEG0, set()),
]


def tensor_outputs(model: torch.nn.Module, image: torch.Tensor) -> list:
    forward = get_flops.tensor_forward(model, *image.shape[-2:])
    with torch.no_grad():
        outputs = forward(image)
    flat, stack = [], [outputs]
    while stack:
        item = stack.pop()
        if isinstance(item, (tuple, list)):
            stack.extend(reversed(item))
        else:
            flat.append(item)
    return flat


@pytest.mark.parametrize('config_name, version, dropped', MODELS, ids=[m[0].split('_')[0] for m in MODELS])
def test_upstream_file_gives_the_outputs_of_its_weights(config_name, version, dropped, tmp_path):
    config = REPO / 'configs' / 'rmt' / config_name
    model = trained_like_model(config)
    upstream = write_upstream_file(model, config, version, tmp_path / 'upstream.pth')
    fresh = build_model(config)
    conversion = convert_upstream_trained(upstream['state_dict'], specs(fresh.state_dict()),
                                          fresh.backbone.out_indices)
    assert set(conversion.dropped) == dropped
    assert all('stage' in reason for reason in conversion.dropped.values())
    result = fresh.load_state_dict(conversion.state_dict, strict=False)
    assert result.missing_keys == [] and result.unexpected_keys == []
    if not dropped:  # the keys already match: load_from takes the upstream file as it is
        direct = fresh.load_state_dict(upstream['state_dict'], strict=False)
        assert direct.missing_keys == [] and direct.unexpected_keys == []
    check_class_names(upstream['meta']['CLASSES'], dataset_classes(Config.fromfile(str(config))))
    image = torch.rand(1, 3, 64, 96, generator=torch.Generator().manual_seed(1))
    expected, actual = tensor_outputs(model, image), tensor_outputs(fresh, image)
    assert len(expected) == len(actual) > 0
    for want, got in zip(expected, actual):
        assert torch.equal(want, got)
