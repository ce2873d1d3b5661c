"""The conversion of the authors' trained detectors and segmentors (mmdet 2.x, mmseg 0.x) to our models' keys:
the layout helper of the tests against the authors' ImageNet files, and each file that does not fit the config's
model refused with one line naming why (the converter tool's runs are tests/tools/test_upstream_trained.py's)."""
import pytest
import torch

from mmrmt.checkpoint import TensorSpec
from mmrmt.models.backbones import RMT
from helpers.tool_modules import import_tool
from helpers.upstream_layouts import upstream_layouts
from helpers.upstream_trained_layouts import convfc_bbox_head, rmt_backbone, under

converter = import_tool('tools/model_converters/rmt_upstream_trained_to_mmrmt.py')
convert_upstream_trained, check_class_names = converter.convert_upstream_trained, converter.check_class_names


@pytest.mark.parametrize('variant', ['t', 's', 'b', 'l'])
def test_upstream_backbone_layout_is_that_of_the_imagenet_files(variant):
    """The layout helper's RMT equals the authors' ImageNet files (less the
    classifier) key for key, plus the four output norms of the dense models."""
    arch = RMT.arch_zoo[variant]
    layout = rmt_backbone(arch['embed_dims'], arch['depths'], arch['num_heads'], arch['mlp_ratios'],
                          arch['layer_scales'])
    imagenet = {key: shape for key, shape in upstream_layouts()[f'rmt-{variant}'].items()
                if not key.startswith(RMT.dropped_checkpoint_prefixes)}
    assert {key: shape for key, shape in layout.items() if not key.startswith('extra_norms.')} == imagenet
    assert {key: shape for key, shape in layout.items() if key.startswith('extra_norms.')} == {
        f'extra_norms.{i}.{name}': (dims, ) for i, dims in enumerate(arch['embed_dims'])
        for name in ('weight', 'bias')}


def head_specs(num_classes: int) -> dict:
    shapes = under('roi_head.bbox_head', convfc_bbox_head(8, num_classes, 16, num_shared_fcs=2))
    return {key: TensorSpec(torch.Size(shape), torch.float32) for key, shape in shapes.items()}


def test_another_class_count_names_num_classes():
    weights = {key: torch.zeros(spec.shape) for key, spec in head_specs(80).items()}
    with pytest.raises(ValueError, match=r'fc_cls.weight: file \(81, 16\) vs model \(4, 16\) '
                                         r'\(another class count: set num_classes'):
        convert_upstream_trained(weights, head_specs(3), emitted_stages=(0, 1, 2, 3))


@pytest.mark.parametrize('dtype', [torch.int8, torch.bool])
def test_a_file_of_integers_is_refused(dtype):
    weights = {key: torch.zeros(spec.shape, dtype=dtype) for key, spec in head_specs(3).items()}
    with pytest.raises(ValueError, match=rf"does not fit the config's model: \d+ tensors hold another kind of number "
                                         rf"than the model's \(\S+: file {str(dtype)[6:]} vs model float32"):
        convert_upstream_trained(weights, head_specs(3), emitted_stages=(0, 1, 2, 3))


def test_keys_of_no_upstream_module_are_errors():
    weights = {key: torch.zeros(spec.shape) for key, spec in head_specs(3).items()}
    weights['roi_head.bbox_head.fc_extra.weight'] = torch.zeros(2, 2)
    with pytest.raises(ValueError, match=r'1 keys belong to no module .*fc_extra'):
        convert_upstream_trained(weights, head_specs(3), emitted_stages=(0, 1, 2, 3))


def test_class_names_in_another_order_are_refused():
    check_class_names(('person', 'car'), ('person', 'car'))
    check_class_names(None, ('person', 'car'))  # files without meta['CLASSES'] are not checked
    with pytest.raises(ValueError, match=r"first differ at index 1 \(\['car'\] vs \['bus'\]\)"):
        check_class_names(('person', 'car', 'bus'), ('person', 'bus', 'car'))
