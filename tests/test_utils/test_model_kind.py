"""model_kind: the task of a detector or segmentor read alike from a config's model dict and a built
model; config_model_kind adds the masks of a two-stage detector."""
import pytest
from mmengine.config import Config
from torch import nn

from mmrmt.utils.model_kind import config_model_kind, model_kind

TWO_STAGE = dict(type='MaskRCNN', rpn_head=dict(type='RPNHead'), roi_head=dict(type='StandardRoIHead'))
KINDS = [
    (TWO_STAGE, 'two_stage'),
    (dict(type='RetinaNet', bbox_head=dict(type='RetinaHead')), 'single_stage'),
    (dict(type='EncoderDecoder', decode_head=dict(type='UPerHead')), 'segmentor'),
    (dict(type='RMT'), None),
    (dict(type='X', rpn_head=dict(type='RPNHead')), None),  # an RPN alone is no two-stage detector
]


@pytest.mark.parametrize('model,kind', KINDS)
def test_a_config_and_a_built_model_read_alike(model, kind):
    assert model_kind(model) == kind
    built = nn.Module()
    for head in (key for key in model if key.endswith('_head')):
        setattr(built, head, nn.Identity())
    assert model_kind(built) == kind


def test_the_masks_of_a_two_stage_config():
    with_masks = dict(TWO_STAGE, roi_head=dict(type='StandardRoIHead', mask_head=dict(type='FCNMaskHead')))
    assert config_model_kind(Config(dict(model=with_masks))) == 'two_stage+masks'
    assert config_model_kind(Config(dict(model=TWO_STAGE))) == 'two_stage'
    assert config_model_kind(Config(dict())) is None
