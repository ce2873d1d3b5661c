"""Error bounds derived from a floating-point format's unit roundoff and the size
of the computation, for tests that compare two computations of the same function.

Nothing here is fitted to a machine's result. The model is the standard one
(Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., ch. 3):
every rounding to a format with unit roundoff ``u`` (half its machine epsilon)
errs by a relative ``|delta| <= u``, and a sum of ``n`` terms so rounded errs by
at most ``gamma_n = n u / (1 - n u)`` of the sum of the terms' magnitudes, and
(the roundings independent) by at most ``LAMBDA sqrt(n) u`` but with a
vanishing probability: the bounds here use the latter. Which
order a kernel sums in (a vector width, a blocked or pairwise sum, the threads
it splits over) changes which of these errors occur, never their bound; hence
the bounds hold under every kernel set (``ATEN_CPU_CAPABILITY``,
``ONEDNN_MAX_CPU_ISA``) and thread count.
"""
import math
from typing import Optional, Sequence

import torch


def unit_roundoff(dtype: torch.dtype) -> float:
    """Largest relative error of rounding a real number to ``dtype``: 2**-24 for
    float32, 2**-53 for float64, 2**-11 for float16, 2**-8 for bfloat16."""
    return torch.finfo(dtype).eps / 2


#: How many times the low-precision error may exceed the float32 one (in their
#: unit roundoffs) or the reduction floor: a constant of the probabilistic
#: model (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019), in which a sum of
#: n independently rounded terms errs by more than LAMBDA * sqrt(n) * u of the
#: terms' magnitude with probability below 2 exp(-LAMBDA**2 / 2) < 1e-13.
LAMBDA = 8.


def one_computation(dtype: torch.dtype, terms: int, depth: int = 1) -> float:
    """Relative error allowed to a ``dtype`` computation against the exact result,
    on unit-scale random inputs (what the tests feed), to be used as both
    ``rtol`` and, times the values' magnitude, ``atol`` (:func:`assert_close`).

    Each of ``depth`` successive steps (an inner product, a reduction, a
    normalisation) sums at most ``terms`` terms, erring by at most
    ``LAMBDA * sqrt(terms) * u`` of the terms' summed magnitude; of random-signed
    terms that sum is ``sqrt(terms)`` times the result's magnitude. Independent
    errors of the steps add to ``sqrt(depth)`` times one step's.
    """
    return LAMBDA * math.sqrt(depth) * terms * unit_roundoff(dtype)


def two_implementations(dtype: torch.dtype, terms: int, depth: int = 1) -> float:
    """Relative difference allowed between two ``dtype`` computations of one
    function: each within :func:`one_computation` of the exact result."""
    return 2 * one_computation(dtype, terms, depth)


def assert_close(actual: torch.Tensor, expected: torch.Tensor, tolerance: float, scale: Optional[float] = None,
                 msg: Optional[str] = None) -> None:
    """``|actual - expected| <= tolerance * (|expected| + scale)`` elementwise:
    ``scale`` (by default the largest ``|expected|``) is the magnitude the
    rounding errors are relative to, so near-zero elements are not held to a
    relative error their rounding cannot give. Pass the largest of a set of
    tensors (all gradients) where one tensor's own values are all near zero."""
    scale = expected.abs().max().item() if scale is None else scale
    torch.testing.assert_close(actual, expected, rtol=tolerance, atol=tolerance * scale, msg=msg)


def relative_error(ours: torch.Tensor, reference: torch.Tensor) -> float:
    """Frobenius-norm error of ``ours`` relative to ``reference``, computed in float64."""
    reference = reference.double()
    return ((ours.double() - reference).norm() / reference.norm()).item()


def low_precision_bound(dtype: torch.dtype, terms: int, float32_error: float) -> float:
    """Relative error (against float64) allowed to a tensor computed in ``dtype``.

    ``float32_error`` is the same tensor's float32 error against float64:
    divided by float32's unit roundoff it is the factor ``kappa`` by which this
    computation amplifies rounding (its conditioning and depth), so a
    ``dtype`` computation errs by about ``kappa * u(dtype)``. Where kernels sum
    in another order in ``dtype`` than in float32 (sequentially instead of
    blocked), a reduction of ``terms`` terms adds up to ``sqrt(terms) * u``
    (each term's rounding independent). The bound is LAMBDA times the larger.
    """
    kappa = float32_error / unit_roundoff(torch.float32)
    return LAMBDA * unit_roundoff(dtype) * max(math.sqrt(terms), kappa)


def assert_within_low_precision(low: Sequence[torch.Tensor], full: Sequence[torch.Tensor],
                                exact: Sequence[torch.Tensor], dtype: torch.dtype, terms: Sequence[int]) -> None:
    """Each tensor of a ``dtype`` computation (``low``) within its
    :func:`low_precision_bound` of the float64 one (``exact``), given the error
    of the float32 one (``full``); ``terms[i]`` is how many terms tensor ``i`` sums."""
    for index, (ours, float32, truth, count) in enumerate(zip(low, full, exact, terms, strict=True)):
        assert torch.isfinite(ours).all(), f'tensor {index} is not finite'
        error = relative_error(ours, truth)
        bound = low_precision_bound(dtype, count, relative_error(float32, truth))
        assert error <= bound, f'tensor {index}: {dtype} error {error:.2e} > bound {bound:.2e}'
