"""ResT's multi-head attention core, computed leanly: head mixing, softmax, instance norm.

For each sample and head ``h'`` the spec computes, over (N, N') maps,
``T = sum_h M[h', h] * scale * q_h k_h^T + b[h']``, then ``P = softmax(T)``
per row, then ``(P - mean(P)) / sqrt(var(P) + eps)`` per map (instance
norm, no affine), then that times ``v_{h'}``. :func:`mixed_head_attention`
computes the same values without ever holding a whole map, from these
identities:

- every softmax row sums to one, so the map's mean is exactly ``1 / N'``,
  and the instance norm is ``D * r`` with ``D = P - 1 / N'`` and one scalar
  ``r = (mean(D^2) + eps)^-1/2`` per map: ``r`` scales the (N, d) output
  ``D v`` instead of the (N, N') map;
- ``D`` is computed to float precision from ``u = expm1(T - rowmax)``:
  ``D = (u - mean_row(u)) / (N' (1 + mean_row(u)))`` (subtracting ``1 / N'``
  from rounded probabilities would lose most digits of near-uniform rows);
- ``D v = D w`` for the centred values ``w = v - mean(v)`` (rows of ``D`` sum
  to zero), which keeps a large mean of ``v`` out of the rounding;
- ``b`` shifts whole rows, which the softmax ignores: it changes nothing,
  and its gradient is exactly zero.

Every step is row-local except ``r``, so the rows are processed a few at a
time (:data:`ROW_CHUNK_BYTES` of scores each) and ``r`` applied at the end;
the backward pass recomputes the scores the same way, a chunk at a time,
from q, k, w and per-row statistics (two floats per row).
"""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

#: Bytes of scores (all images and heads of a chunk of query rows) held at once.
ROW_CHUNK_BYTES = 4 * 2**20
#: The instance norm's epsilon (``nn.InstanceNorm2d``'s default).
EPS = 1e-5


def _row_step(batch: int, heads: int, keys: int, itemsize: int) -> int:
    return max(1, ROW_CHUNK_BYTES // (batch * heads * keys * itemsize))


def _deviations(q: torch.Tensor, keys_t: torch.Tensor, mix: torch.Tensor,
                shift: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``u = expm1(T - shift)`` of one chunk of (B, n, R, d) queries, with T's row max if ``shift`` is None.

    Returns ``u`` (B, n, R, N'), the unmixed scores ``q k^T`` (for the
    gradient of the mixing weight) and the shift.
    """
    scores = torch.matmul(q, keys_t)
    mixed = F.conv2d(scores, mix[:, :, None, None])
    if shift is None:
        shift = mixed.amax(dim=-1, keepdim=True)
    return mixed.sub_(shift).expm1_(), scores, shift


def _centre(u: torch.Tensor, mean: torch.Tensor, keys: int) -> torch.Tensor:
    """``D = p - 1 / N' = (u - mean) / (N' (1 + mean))``, in place of ``u``."""
    coef = 1 / ((1 + mean) * keys)
    return torch.addcmul(-mean * coef, u, coef, out=u)


class _MixedHeadAttention(torch.autograd.Function):
    """See :func:`mixed_head_attention`; saves q, k, w and per-row statistics only."""

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mix_weight: torch.Tensor,
                mix_bias: torch.Tensor, scale: float) -> torch.Tensor:
        batch, length, heads, dims = q.shape
        keys = k.shape[1]
        mix = mix_weight.reshape(heads, heads) * scale
        q = q.transpose(1, 2)  # (B, n, N, d) views
        keys_t = k.permute(0, 2, 3, 1).contiguous()  # (B, n, d, N')
        values = v.transpose(1, 2)
        centred = (values - values.mean(dim=2, keepdim=True)).contiguous()  # w, (B, n, N', d)
        out = q.new_empty(batch, length, heads, dims)
        out_heads = out.transpose(1, 2)
        shift = q.new_empty(batch, heads, length, 1)
        row_mean = torch.empty_like(shift)
        row_square_sum = torch.empty_like(shift)
        step = _row_step(batch, heads, keys, q.element_size())
        for start in range(0, length, step):
            rows = slice(start, start + step)
            u, _, shift[:, :, rows] = _deviations(q[:, :, rows], keys_t, mix)
            row_mean[:, :, rows] = mean = u.mean(dim=-1, keepdim=True)
            dev = _centre(u, mean, keys)
            row_square_sum[:, :, rows] = torch.linalg.vector_norm(dev, dim=-1, keepdim=True).square_()
            out_heads[:, :, rows] = torch.matmul(dev, centred)
        norm = torch.rsqrt(row_square_sum.sum(dim=2, keepdim=True) / (length * keys) + EPS)  # r, (B, n, 1, 1)
        out.mul_(norm.transpose(1, 2))
        ctx.scale = scale
        ctx.save_for_backward(q, keys_t, centred, mix, shift, row_mean, row_square_sum, norm, out,
                              mix_weight, mix_bias)
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        (q, keys_t, centred, mix, shift, row_mean, row_square_sum, norm, out, mix_weight,
         mix_bias) = ctx.saved_tensors
        needs = ctx.needs_input_grad
        batch, heads, length, dims = q.shape
        keys = keys_t.shape[-1]
        grad = grad_out.transpose(1, 2)  # (B, n, N, d)
        out = out.transpose(1, 2)
        grad_dot_out = (grad * out).sum(dim=-1, keepdim=True)  # G_i . out_i, (B, n, N, 1)
        # d loss / d D_ij = r G_i . w_j + kappa D_ij (kappa: through r); the
        # softmax's backward then subtracts each row's p-weighted mean, beta_i.
        kappa = -norm.square() * grad_dot_out.sum(dim=2, keepdim=True) / (length * keys)
        beta = grad_dot_out + kappa * row_square_sum
        # [r G, -beta] [w, 1]^T / N' = (r G w^T - beta) / N' in one product.
        grad_aug = torch.cat((grad * norm, -beta), dim=-1).div_(keys)
        centred_aug = torch.cat((centred, centred.new_ones(batch, heads, keys, 1)), dim=-1)
        grad_q = torch.empty_like(q) if needs[0] else None
        grad_keys_t = torch.zeros_like(keys_t) if needs[1] else None
        grad_v = torch.zeros_like(centred) if needs[2] else None
        grad_mix = torch.zeros_like(mix) if needs[3] else None
        step = _row_step(batch, heads, keys, q.element_size())
        for start in range(0, length, step):
            rows = slice(start, start + step)
            q_rows = q[:, :, rows]
            u, scores, _ = _deviations(q_rows, keys_t, mix, shift[:, :, rows])
            dev = _centre(u, row_mean[:, :, rows], keys)
            if grad_v is not None:
                grad_v += torch.matmul(dev.transpose(-1, -2), grad[:, :, rows] * norm)
            # x = (d loss / d D - beta) / N'; d loss / d T = p x N' = x + N' D x.
            x = torch.matmul(grad_aug[:, :, rows], centred_aug.transpose(-1, -2))
            x.addcmul_(dev, kappa / keys)
            grad_mixed = x.addcmul_(dev, x, value=keys)
            if grad_mix is not None:
                grad_mix += torch.matmul(grad_mixed.flatten(2), scores.flatten(2).transpose(-1, -2)).sum(0)
            grad_scores = F.conv2d(grad_mixed, mix.t()[:, :, None, None])
            if grad_q is not None:
                grad_q[:, :, rows] = torch.matmul(grad_scores, keys_t.transpose(-1, -2))
            if grad_keys_t is not None:
                grad_keys_t += torch.matmul(q_rows.transpose(-1, -2), grad_scores)
        grad_mix_weight = None if grad_mix is None else (grad_mix * ctx.scale).view_as(mix_weight)
        grad_mix_bias = torch.zeros_like(mix_bias) if needs[4] else None
        return (None if grad_q is None else grad_q.transpose(1, 2),
                None if grad_keys_t is None else grad_keys_t.permute(0, 3, 1, 2),
                None if grad_v is None else grad_v.transpose(1, 2),
                grad_mix_weight, grad_mix_bias, None)


def mixed_head_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mix_weight: torch.Tensor,
                         mix_bias: torch.Tensor, scale: float) -> torch.Tensor:
    """ResT's attention with head mixing, per sample and head, without holding a whole score map.

    Computes ``InstanceNorm(softmax(conv1x1(scale * q k^T))) v`` (see the
    module's docstring for how), with the 1x1 conv over heads given by
    ``mix_weight`` (n, n, 1, 1) and ``mix_bias`` (n, ); a single-element map
    gives 0. With autograd, only q, k, v's centred copy and per-row
    statistics are kept for backward; the bias gets a zero gradient.
    Under autocast, half-precision inputs are computed in float32.

    Args:
        q (Tensor): (B, N, n, d) queries.
        k (Tensor): (B, N', n, d) keys.
        v (Tensor): (B, N', n, d) values.
        mix_weight (Tensor): The head-mixing conv's weight.
        mix_bias (Tensor): The head-mixing conv's bias.
        scale (float): Score scale, ``d ** -0.5``.

    Returns:
        Tensor: (B, N, n, d), contiguous.
    """
    dtype = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    with torch.autocast(q.device.type, enabled=False):
        args = [t.to(dtype) for t in (q, k, v, mix_weight, mix_bias)]
        return _MixedHeadAttention.apply(*args, scale)
