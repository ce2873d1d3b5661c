"""BF32 on the CPU: float32 tensors whose oneDNN GEMMs and convolutions multiply in bf16.

torch's ``torch.backends.mkldnn.matmul.fp32_precision`` and ``.conv.fp32_precision`` set to ``'bf16'``
let oneDNN round a float32 GEMM's or convolution's operands to bf16 inside its kernel (AMX or AVX-512 BF16
dot products, float32 accumulation); every tensor stays float32, so nothing is cast between layers and the
rest of the model (softmax, norms, sums) is computed in float32. Eagerly, float32 Linears of more than one
row go to MKL rather than oneDNN and keep float32; the convolutions and oneDNN's GEMMs take it.
docs/benchmark.md measures it beside bf16 autocast (faster than float32 by about a tenth, with a third of
bf16 autocast's error, on an AMX Xeon).
"""
from contextlib import contextmanager
from typing import Iterator

import torch


@contextmanager
def bf32_gemms() -> Iterator[None]:
    """Within the block, oneDNN's float32 GEMMs and convolutions multiply in bf16; torch's setting is
    restored after it (it is process-wide: other threads see it meanwhile)."""
    matmul, conv = torch.backends.mkldnn.matmul, torch.backends.mkldnn.conv
    saved = matmul.fp32_precision, conv.fp32_precision
    matmul.fp32_precision = conv.fp32_precision = 'bf16'
    try:
        yield
    finally:
        matmul.fp32_precision, conv.fp32_precision = saved
