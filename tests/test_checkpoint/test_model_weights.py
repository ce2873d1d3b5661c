"""load_model_weights: the one way a tool loads a checkpoint (read by read_checkpoint) into the model it built."""
import pytest
import torch
from torch import nn

from mmrmt.checkpoint import CheckpointRefusedError, load_model_weights, read_checkpoint


class Head(nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
        self.cls = nn.Linear(4, classes)


def mmengine_checkpoint(model: nn.Module, path) -> dict:
    """What an mmengine runner saves: the weights under ``state_dict``, beside ``meta`` (DDP's ``module.``)."""
    checkpoint = dict(meta=dict(mmengine_version='0.10.7', dataset_meta=dict(classes=('a', 'b', 'c'))),
                      state_dict={f'module.{key}': value for key, value in model.state_dict().items()},
                      message_hub=dict(runtime_info={}))
    torch.save(checkpoint, path)
    return checkpoint


def test_every_weight_loads_from_an_mmengine_checkpoint(tmp_path):
    torch.manual_seed(0)
    trained = Head()
    trained.backbone[1].running_mean.uniform_()
    mmengine_checkpoint(trained, tmp_path / 'iter_4.pth')
    model = Head()
    load_model_weights(model, read_checkpoint(str(tmp_path / 'iter_4.pth')), 'iter_4.pth')
    for key, value in trained.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key


def test_what_does_not_fit_is_one_line_and_the_model_is_untouched(tmp_path):
    path = tmp_path / 'other.pth'
    other = Head(classes=5).state_dict()
    other['extra.weight'] = torch.zeros(1)
    del other['backbone.1.running_var']
    torch.save(dict(state_dict=other), path)
    model = Head()
    before = {key: value.clone() for key, value in model.state_dict().items()}
    with pytest.raises(ValueError) as error:
        load_model_weights(model, read_checkpoint(str(path)), str(path))
    assert str(error.value) == (
        f'{path} does not fit Head: 2 tensors differ in shape (cls.weight: file (5, 4) vs model (3, 4), '
        'cls.bias: file (5,) vs model (3,)); 1 unexpected keys (extra.weight); 1 missing keys '
        '(backbone.1.running_var). Is it a checkpoint of another model?')
    assert all(torch.equal(model.state_dict()[key], value) for key, value in before.items())
    with pytest.raises(ValueError, match=r'^the --weights checkpoint does not fit Head: 1 missing keys'):
        load_model_weights(model, dict(state_dict={k: v for k, v in model.state_dict().items() if k != 'cls.bias'}),
                           'the --weights checkpoint')


def test_files_are_read_weights_only(tmp_path):
    path = tmp_path / 'code.pth'
    torch.save(dict(state_dict=Head().state_dict(), hook=print), path)
    with pytest.raises(CheckpointRefusedError, match=r'holds Python objects besides weights \(.*GLOBAL print'):
        load_model_weights(Head(), read_checkpoint(str(path)), str(path))
