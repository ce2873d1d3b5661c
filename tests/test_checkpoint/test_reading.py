"""extract_state_dict: the wrappings of the authors' and mmengine's files, unwrapped."""
import pytest
import torch

from mmrmt.checkpoint import extract_state_dict

WEIGHTS = {'patch_embed.proj.0.weight': torch.ones(2, 3), 'layers.0.blocks.0.ffn.fc1.bias': torch.zeros(4)}


@pytest.mark.parametrize('content', [
    dict(model=WEIGHTS, epoch=300),
    dict(state_dict=WEIGHTS, meta=dict(epoch=12)),
    dict(model_ema=WEIGHTS, epoch=300),
    dict(model={f'module.{key}': value for key, value in WEIGHTS.items()}),
    WEIGHTS,
], ids=['model', 'state_dict', 'model_ema', 'module', 'bare'])
def test_every_wrapping_gives_the_bare_weights(content):
    state_dict = extract_state_dict(content)
    assert state_dict.keys() == WEIGHTS.keys()
    assert all(state_dict[key] is WEIGHTS[key] for key in WEIGHTS)


def test_a_prefix_takes_out_a_sub_module():
    detector = {f'backbone.{key}': value for key, value in WEIGHTS.items()}
    detector['neck.lateral_convs.0.conv.weight'] = torch.ones(1)
    assert extract_state_dict(dict(state_dict=detector), prefix='backbone.').keys() == WEIGHTS.keys()


@pytest.mark.parametrize('content, prefix, message', [
    ([1, 2], '', r'^model\.pth holds a list, not a state dict$'),
    (dict(model=dict(epoch=3)), '',
     r"^model\.pth is not a model checkpoint: entries that are not tensors: \['epoch'\]$"),
    (dict(state_dict=WEIGHTS), 'backbone.',
     r"^model\.pth is not a model checkpoint: no weights under prefix 'backbone\.'$"),
])
def test_what_is_no_state_dict_is_named(content, prefix, message):
    with pytest.raises(ValueError, match=message):
        extract_state_dict(content, 'model.pth', prefix=prefix)
