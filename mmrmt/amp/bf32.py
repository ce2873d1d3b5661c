"""BF32 on the CPU: float32 tensors whose oneDNN GEMMs and convolutions multiply in bf16 (AMX or AVX-512 BF16 dot
products, float32 accumulation); nothing is cast between layers (eagerly, float32 Linears of more than one row go to
MKL and keep float32). docs/benchmark.md measures it beside bf16 autocast."""
from contextlib import contextmanager
from typing import Iterator

import torch


@contextmanager
def bf32_gemms() -> Iterator[None]:
    """Within the block, oneDNN's float32 GEMMs and convolutions multiply in bf16 (process-wide: other threads see it
    meanwhile); torch's setting is restored after it."""
    matmul, conv = torch.backends.mkldnn.matmul, torch.backends.mkldnn.conv
    saved = matmul.fp32_precision, conv.fp32_precision
    matmul.fp32_precision = conv.fp32_precision = 'bf16'
    try:
        yield
    finally:
        matmul.fp32_precision, conv.fp32_precision = saved
