"""The dtypes bf16 attention can be forced to compute in here, for tests that run both paths."""
import torch

from mmrmt.amp.cpu_attention import CPU_ATTENTION_DTYPES

#: bfloat16 where torch's fused CPU attention runs it under the kernel set in force (not on AMX tiles
#: below AVX-512 kernels, where it raises and the product never calls it: a forward attends in float32), and float32.
BF16_ATTENDED_IN = sorted({CPU_ATTENTION_DTYPES[False][torch.bfloat16], torch.float32}, key=str)
