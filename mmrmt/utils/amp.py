"""The tools' ``--amp``: float16 autocast on CUDA, bf16 on a CPU with native bf16 (AVX-512 BF16 or AMX), refused
elsewhere in one line; ``--amp bf32`` (inference tools, CPU): float32 tensors, oneDNN's GEMMs in bf16."""
import argparse
from typing import Optional

import torch
from mmengine.config import Config

from mmrmt.cpu_features import cpu_features
from .preflight import PreflightError


def amp_dtype(device_type: str) -> torch.dtype:
    """What ``--amp`` computes in on ``device_type`` ('cuda' or 'cpu'); a :class:`PreflightError` on a CPU
    without native bf16, where torch emulates it (slower than float32)."""
    if device_type == 'cuda':
        return torch.float16
    features = cpu_features()
    if not features.bf16:
        raise PreflightError(f'--amp on the CPU: this CPU ({features.model}) has no AVX-512 BF16 or AMX, where '
                             "torch's bf16 autocast is emulated and slower than float32; run without --amp (or "
                             'on a CUDA device)')
    return torch.bfloat16


def add_amp_argument(parser: argparse.ArgumentParser) -> None:
    """``--amp [bf32]`` of an inference tool: ``args.amp`` None, 'autocast' or 'bf32'."""
    parser.add_argument('--amp', nargs='?', const='autocast', choices=('autocast', 'bf32'),
                        help='automatic mixed precision: float16 on CUDA, bf16 on a CPU with AVX-512 BF16 or AMX; '
                        "'--amp bf32': float32 tensors, oneDNN's GEMMs and convolutions in bf16 (such a CPU)")


def check_amp(amp: Optional[str], device_type: str, compile: bool = False) -> None:
    """Fail unless ``--amp`` runs on ``device_type`` (:func:`amp_dtype`), with ``--compile`` if ``compile``:
    bf32 is a CPU setting, and Inductor neither keys its cached graphs on it nor gains from it."""
    if amp is None:
        return
    amp_dtype(device_type)
    if amp == 'bf32' and device_type != 'cpu':
        raise PreflightError("--amp bf32 sets oneDNN's CPU GEMMs; on CUDA give --amp (float16 autocast)")
    if amp == 'bf32' and compile:
        raise PreflightError('--amp bf32 with --compile: Inductor neither keys its cached graphs on bf32 nor gains '
                             'from it (docs/benchmark.md); give --amp (bf16 autocast) with --compile')


def use_amp_optim_wrapper(cfg: Config) -> None:
    """Train ``cfg`` in mixed precision: mmengine's ``AmpOptimWrapper`` (float16, the config's ``amp_loss_scale``,
    'dynamic' by default) on CUDA, :class:`~mmrmt.engine.CPUAmpOptimWrapper` on a CPU (see :func:`amp_dtype`)."""
    device_type = 'cuda' if torch.cuda.is_available() else 'cpu'
    amp_dtype(device_type)
    cfg.optim_wrapper.type = 'AmpOptimWrapper' if device_type == 'cuda' else 'CPUAmpOptimWrapper'
    if device_type == 'cuda':
        cfg.optim_wrapper.loss_scale = cfg.get('amp_loss_scale', 'dynamic')
