"""mmrmt.amp.bf32: oneDNN's float32 GEMMs and convolutions in bf16 within the block, torch's setting back
after it, also when the block raises."""
import pytest
import torch

from mmrmt.amp.bf32 import bf32_gemms


def precisions():
    return torch.backends.mkldnn.matmul.fp32_precision, torch.backends.mkldnn.conv.fp32_precision


def test_bf32_within_the_block_and_torchs_setting_after():
    before = precisions()
    with bf32_gemms():
        assert precisions() == ('bf16', 'bf16')
    assert precisions() == before


def test_setting_restored_when_the_block_raises():
    before = precisions()
    with pytest.raises(RuntimeError, match='inside'):
        with bf32_gemms():
            raise RuntimeError('inside')
    assert precisions() == before


def test_convolution_within_bf32_rounds_no_more_than_bf16():
    """A float32 convolution within the block stays float32 and within bf16's rounding of the float32 result
    (bound: 2 x bf16's unit roundoff 2^-8 per operand, times the sum of absolute products); on CPUs without
    native bf16 oneDNN may keep float32, which is within the bound too."""
    images, weight = torch.randn(2, 8, 12, 12), torch.randn(4, 8, 3, 3)
    reference = torch.nn.functional.conv2d(images.double(), weight.double())
    with bf32_gemms():
        output = torch.nn.functional.conv2d(images, weight)
    bound = 2 * 2**-8 * torch.nn.functional.conv2d(images.double().abs(), weight.double().abs())
    assert output.dtype == torch.float32
    assert ((output.double() - reference).abs() <= bound + 1e-5).all()
