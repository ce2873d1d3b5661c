"""What every CUDA test shares."""
import pytest
import torch


@pytest.fixture(autouse=True)
def _full_float32():
    """float32 kernels without TF32 (cuDNN's convolutions use it by default)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved
