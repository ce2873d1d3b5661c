"""The dtypes bf16 attention can be forced to compute in here, for tests that run both paths."""
import torch

from mmrmt.amp.cpu_attention import half_precision_kernel_runs
from mmrmt.cpu_features import cpu_features

#: bfloat16 where torch's fused CPU attention runs it under the kernel set in force (not on AMX tiles
#: below AVX-512 kernels, where it raises and the product never calls it), and float32.
BF16_ATTENDED_IN = [dtype for dtype in (torch.bfloat16, torch.float32)
                    if dtype == torch.float32 or half_precision_kernel_runs(
                        dtype, cpu_features().flags, torch.backends.cpu.get_cpu_capability())]
