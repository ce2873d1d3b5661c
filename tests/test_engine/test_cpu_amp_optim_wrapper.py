"""CPUAmpOptimWrapper: tools/train.py --amp on the CPU runs the forward in bf16 autocast and steps on
the unscaled float32 gradients."""
import torch
from mmengine.optim import build_optim_wrapper
from torch import nn

import mmrmt.engine  # noqa: F401  (registers CPUAmpOptimWrapper)


def model_and_batch():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)), torch.randn(8, 16)


def test_step_is_the_bf16_autocast_step_unscaled():
    model, batch = model_and_batch()
    reference = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    reference.load_state_dict(model.state_dict())
    wrapper = build_optim_wrapper(model, dict(type='CPUAmpOptimWrapper', optimizer=dict(type='SGD', lr=0.1)))
    with wrapper.optim_context(model):
        output = model(batch)
        loss = output.float().square().mean()
    assert output.dtype == torch.bfloat16
    wrapper.update_params(loss)

    with torch.autocast('cpu', dtype=torch.bfloat16):
        expected_loss = reference(batch).float().square().mean()
    expected_loss.backward()
    torch.optim.SGD(reference.parameters(), lr=0.1).step()  # no loss scale, unlike AmpOptimWrapper
    for ours, theirs in zip(model.parameters(), reference.parameters()):
        assert ours.dtype == torch.float32
        torch.testing.assert_close(ours, theirs, rtol=0, atol=0)


def test_state_dict_is_the_plain_optimizers():
    model, _ = model_and_batch()
    wrapper = build_optim_wrapper(model, dict(type='CPUAmpOptimWrapper', optimizer=dict(type='SGD', lr=0.1)))
    assert 'loss_scaler' not in wrapper.state_dict()
    assert set(wrapper.state_dict()) == set(wrapper.optimizer.state_dict())
