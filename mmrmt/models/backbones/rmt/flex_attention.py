"""MaSA through FlexAttention: the decay added to the scores from the query and key indices, no mask tensor.

``torch.nn.attention.flex_attention`` calls a ``score_mod(score, b, h, q_idx,
kv_idx)`` on every logit inside its fused kernel (Inductor's C++ template on
the CPU, Triton on CUDA). MaSA's log-decay is such a term: ``decay[head] *
distance`` with the distance the Manhattan one of the two tokens' grid
positions (full stages) or ``|q_idx - kv_idx|`` along a row or a column
(decomposed stages). So no (n, hw, hw) table is built, kept or read, and no
logits are written out.

FlexAttention runs fused only where Inductor compiles it, and on the CPU
forward only: :func:`flex_attention_runs` says where this form attends
through it; elsewhere it is the fast form (:class:`.fast_attention.FastManhattanSelfAttention`).
"""
from functools import lru_cache
from typing import Callable

import torch
from torch.nn.attention.flex_attention import flex_attention

from ...layers import run_mode
from ...layers.fused_attention import attention_dtype
from .fast_attention import FastManhattanSelfAttention
from .fast_relative_position import FastManhattanRelPos, FastTables, rotate_qk

#: The dtypes FlexAttention's kernels take (not float64).
FLEX_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
#: Narrowest head FlexAttention's Triton kernel takes (``tl.dot`` needs 16).
CUDA_MIN_HEAD_DIMS = 16
#: Whether the ATen kernel set in force is one Inductor's FlexAttention CPU template computes right under:
#: AVX-512 only. Under ``ATEN_CPU_CAPABILITY=avx2`` on an AVX-512 CPU (torch 2.14.1) its output is not
#: finite or off by half its magnitude; no AVX2-only CPU has checked it yet. Read once.
CPU_KERNEL_SET_RUNS_FLEX = torch.backends.cpu.get_cpu_capability().upper().startswith('AVX512')

ScoreMod = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


def flex_attention_runs(device_type: str, dtype: torch.dtype, head_dims: int) -> bool:
    """Whether FlexAttention attends fused over ``dtype`` operands (heads of ``head_dims``) on a
    ``device_type`` device, here and now.

    On CUDA: float32 or half operands, heads of 16 channels or more, forward
    and backward (a model run eagerly calls :func:`compiled_flex_attention`).
    On the CPU: inside ``torch.compile`` (eager FlexAttention is the unfused
    reference), without autograd (its CPU kernel has no backward), under an
    AVX-512 kernel set. Never while a graph is recorded for an
    export or a trace (:func:`.run_mode.records_graph`).
    """
    if dtype not in FLEX_DTYPES or run_mode.records_graph():
        return False
    if device_type == 'cuda':
        return head_dims >= CUDA_MIN_HEAD_DIMS
    return (device_type == 'cpu' and CPU_KERNEL_SET_RUNS_FLEX and run_mode.compiles()
            and not run_mode.keeps_autograd())


def flex_tables(relpos: FastManhattanRelPos, height: int, width: int) -> FastTables:
    """The tables of the FlexAttention form for a (height, width) grid, cached in ``relpos``: the float32
    real rotary, (h, w, d) for heads-major q and k, and the float32 log-decay of the heads."""
    def build() -> FastTables:
        rotary = relpos._build_fast_tables(height, width, True, torch.float32, complex_rotary=False)
        return FastTables(cos=rotary.cos, signed_sin=rotary.signed_sin, decay=relpos.decay.float().clone())
    return relpos.cached_tables(('flex', height, width), build)


@lru_cache(maxsize=None)
def compiled_flex_attention() -> Callable[..., torch.Tensor]:
    """``flex_attention`` compiled on its own, for a model run eagerly (inside ``torch.compile`` the
    function itself is called: Inductor compiles it with the rest)."""
    return torch.compile(flex_attention, dynamic=False)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, score_mod: ScoreMod, scale: float) -> torch.Tensor:
    """``softmax(scale * q k^T + score_mod) v`` over (N, H, L, d) operands, fused."""
    flex = flex_attention if run_mode.compiles() else compiled_flex_attention()
    return flex(q, k, v, score_mod=score_mod, scale=scale)


def manhattan_decay(log_decay: torch.Tensor, width: int) -> ScoreMod:
    """The score_mod of a full stage: ``log_decay[head] * (|y_q - y_k| + |x_q - x_k|)``, tokens
    row-major on a grid ``width`` wide."""
    def score_mod(score, batch, head, q_idx, kv_idx):
        distance = (q_idx // width - kv_idx // width).abs() + (q_idx % width - kv_idx % width).abs()
        return score + log_decay[head] * distance
    return score_mod


def line_decay(log_decay: torch.Tensor) -> ScoreMod:
    """The score_mod of a decomposed stage's pass, batch (B n) and one row or column a FlexAttention
    head: ``log_decay[n] * |q_idx - kv_idx|``."""
    heads = log_decay.shape[0]

    def score_mod(score, batch, line, q_idx, kv_idx):
        return score + log_decay[batch % heads] * (q_idx - kv_idx).abs()
    return score_mod


class FlexManhattanSelfAttention(FastManhattanSelfAttention):
    """:class:`.fast_attention.FastManhattanSelfAttention` attending through FlexAttention where it runs fused.

    Where :func:`flex_attention_runs` (CUDA; compiled CPU inference) the
    rotary is the real one (no complex operator to split Inductor's
    kernels), computed in float32 and laid out heads-major in one pass; full
    stages attend over (B, n, hw, d) with :func:`manhattan_decay`, decomposed
    ones over (B n, rows, w, d) then (B n, columns, h, d) views with
    :func:`line_decay`, in :func:`...layers.fused_attention.attention_dtype`.
    Elsewhere (eager or training on the CPU, float64, exports) it computes
    as the fast form. Same arguments and parameters as the reference.
    """

    def _core_dtype(self, qk: torch.Tensor, height: int, width: int) -> torch.dtype:
        if self._attends_flex(qk.device.type, qk.dtype, height, width):
            return attention_dtype(qk)
        return super()._core_dtype(qk, height, width)

    def _tables(self, relpos: FastManhattanRelPos, height: int, width: int, dtype: torch.dtype) -> FastTables:
        if self._attends_flex(relpos.decay.device.type, dtype, height, width):
            return flex_tables(relpos, height, width)
        return super()._tables(relpos, height, width, dtype)

    def _attends_flex(self, device_type: str, dtype: torch.dtype, height: int, width: int) -> bool:
        """Whether this forward over a (height, width) grid attends through FlexAttention.

        Where :func:`flex_attention_runs`, except on the CPU where the
        attention's output is already in the merged heads' layout (at most
        one of the heads, the rows and the columns more than one; full:
        of the heads and the tokens): Inductor then fuses the sum with the
        LCE into the FlexAttention template, whose C++ form raises
        (torch 2.14: "Unsupported for `epilogue_nodes`").
        """
        if not flex_attention_runs(device_type, dtype, self.head_dims):
            return False
        sizes = (self.num_heads, height * width) if not self.decomposed else (self.num_heads, height, width)
        return device_type != 'cpu' or sum(size > 1 for size in sizes) > 1

    def _masa(self, qk: torch.Tensor, v: torch.Tensor, tables: FastTables) -> torch.Tensor:
        if tables.decay is None:
            return super()._masa(qk, v, tables)
        batch, height, width, _, heads, dims = qk.shape
        q, k = rotate_qk(qk, tables, heads_major=True).to(v.dtype)  # each (B, n, h, w, d)
        if not self.decomposed:
            q, k, v = (t.reshape(batch, heads, height * width, dims) for t in (q, k, v.permute(0, 3, 1, 2, 4)))
            return attend(q, k, v, manhattan_decay(tables.decay, width), self.scale).transpose(1, 2)
        q, k = (t.reshape(batch * heads, height, width, dims) for t in (q, k))
        v = v.permute(0, 3, 1, 2, 4).reshape(batch * heads, height, width, dims)
        decay = line_decay(tables.decay)
        v = attend(q, k, v, decay, self.scale).transpose(1, 2)  # along rows; (B n, w, h, d)
        out = attend(q.transpose(1, 2), k.transpose(1, 2), v, decay, self.scale)  # along columns
        return out.transpose(1, 2).reshape(batch, heads, height, width, dims).permute(0, 2, 3, 1, 4)
