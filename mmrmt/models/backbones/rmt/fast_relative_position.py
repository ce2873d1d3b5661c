"""RMT's relative position in its fast form: the tables in the fast MaSA's layout, cached."""
from collections import OrderedDict
from typing import Callable, NamedTuple, Optional

import torch

from ...layers import run_mode
from .relative_position import ManhattanRelPos

COMPLEX_DTYPES = {torch.float32: torch.complex64, torch.float64: torch.complex128}


def apply_rotary_signed(x: torch.Tensor, signed_sin: torch.Tensor, cos: torch.Tensor) -> torch.Tensor:
    """:func:`.relative_position.apply_rotary` with the pair sign folded into ``signed_sin``.

    ``signed_sin`` holds (-sin, sin) on each channel pair, so swapping the
    pair members is all that is left of the rotation; same values bit for bit.
    """
    return torch.addcmul(x * cos, swap_pairs(x), signed_sin)


def swap_pairs(x: torch.Tensor) -> torch.Tensor:
    """``x`` with the members of each channel pair swapped: (x1, x0, x3, x2, ...), exactly."""
    return x.unflatten(-1, (-1, 2)).flip(-1).flatten(-2)


class FastTables(NamedTuple):
    """What the fast MaSA of one grid needs, in the attention dtype.

    The rotary: for float32/float64, ``rotation`` = cos + i sin per channel
    pair (the rotation is then one complex product); for other dtypes (no
    complex counterpart, e.g. bfloat16), or where real tables are asked for,
    ``cos`` and ``signed_sin``. One-dimensional decays (decomposed stages):
    rotary tables of (h, w, d or d / 2), to broadcast over heads-major
    (2, B, n, h, w, ...) q and k; ``mask_w`` is (1, n, w, w) and ``mask_h``
    (1, n, h, h). Otherwise (full stages): rotary tables of (h, w, 1, 1, ...),
    for channels-last (B, h, w, 2, n, ...); ``mask`` is (1, n, hw, hw). A form
    adding the decay inside its kernel (:mod:`.flex_attention`) has no masks
    but ``decay``, the (n, ) log-decay of the heads.
    """
    rotation: Optional[torch.Tensor] = None
    cos: Optional[torch.Tensor] = None
    signed_sin: Optional[torch.Tensor] = None
    mask_h: Optional[torch.Tensor] = None
    mask_w: Optional[torch.Tensor] = None
    mask: Optional[torch.Tensor] = None
    decay: Optional[torch.Tensor] = None


def rotate_qk(qk: torch.Tensor, tables: FastTables, heads_major: bool) -> torch.Tensor:
    """The rotary of channels-last (B, h, w, 2, n, d) q and k, in one pass where complex allows.

    Returns a dense (2, B, n, h, w, d) tensor if ``heads_major``, else a dense
    (B, h, w, 2, n, d) one, in the tables' dtype: half-precision q and k with
    complex (float32) tables are converted in the pass that lays them out,
    then rotated in place without autograd. Same values as
    :func:`.relative_position.apply_rotary` up to rounding.
    """
    if tables.rotation is None:
        if heads_major:
            qk = qk.permute(3, 0, 4, 1, 2, 5).contiguous()
        return apply_rotary_signed(qk, tables.signed_sin, tables.cos)
    dtype = tables.rotation.real.dtype
    if qk.dtype != dtype:
        qk = (qk.permute(3, 0, 4, 1, 2, 5) if heads_major else qk).to(dtype, memory_format=torch.contiguous_format)
        pairs = torch.view_as_complex(qk.unflatten(-1, (-1, 2)))
        rotated = pairs * tables.rotation if run_mode.keeps_autograd() else pairs.mul_(tables.rotation)
        return torch.view_as_real(rotated).flatten(-2)
    pairs = torch.view_as_complex(qk.unflatten(-1, (-1, 2)))
    if heads_major:
        pairs = pairs.permute(3, 0, 4, 1, 2, 5)
    if run_mode.keeps_autograd():
        rotated = pairs.contiguous() * tables.rotation
    else:  # the layout change and the product in one pass
        rotated = torch.mul(pairs, tables.rotation, out=pairs.new_empty(pairs.shape))
    return torch.view_as_real(rotated).flatten(-2)


class FastManhattanRelPos(ManhattanRelPos):
    """:class:`.relative_position.ManhattanRelPos` that also serves :class:`FastTables`, cached.

    :meth:`fast_tables` keeps the tables of the last few grids in a small LRU
    keyed on grid, form, dtype and device. The cache is no part of the state
    dict. It is dropped whenever ``angle`` or ``decay`` differ from the values
    it was built from, whatever changed them (``load_state_dict``, ``.to()``,
    in-place edits, edits through ``.data``, which no version counter sees):
    each call compares the two small buffers with a copy of them.
    """

    #: Most grids kept; the newest entry is kept even when over the byte budget.
    cache_entries = 4
    cache_bytes = 256 * 2**20

    def __init__(self, embed_dims: int, num_heads: int, init_value: float, heads_range: float) -> None:
        super().__init__(embed_dims, num_heads, init_value, heads_range)
        self._cache: 'OrderedDict[tuple, FastTables]' = OrderedDict()
        self._cache_source: Optional[tuple] = None  # copies of (angle, decay) the cache was built from

    def fast_tables(self, height: int, width: int, decomposed: bool, dtype: torch.dtype) -> FastTables:
        """The tables of a (height, width) grid in ``dtype``, cached."""
        return self.cached_tables((height, width, decomposed, dtype),
                                  lambda: self._build_fast_tables(height, width, decomposed, dtype))

    def cached_tables(self, key: tuple, build: Callable[[], FastTables]) -> FastTables:
        """``build()``'s tables, kept in the cache under ``key`` (and the device): a form's own tables
        (``key`` naming them apart from :meth:`fast_tables`' keys) under the same bounds and staleness."""
        if self._cache_is_stale():
            self._cache.clear()
            with torch.inference_mode(False):
                self._cache_source = (self.angle.detach().clone(), self.decay.detach().clone())
        key = (*key, self.decay.device)
        tables = self._cache.get(key)
        if tables is None:
            with torch.inference_mode(False), torch.no_grad():
                tables = build()
            self._cache[key] = tables
            self._evict()
        self._cache.move_to_end(key)
        return tables

    def graph_tables(self, height: int, width: int, decomposed: bool, dtype: torch.dtype) -> FastTables:
        """The tables of a (height, width) grid in ``dtype`` for a recorded graph (see
        :func:`...layers.run_mode.records_graph`): ops of the graph, computed from its (possibly symbolic)
        grid size, real (ONNX has no complex numbers) and uncached, so that a dynamic graph serves any
        input size."""
        return self._build_fast_tables(height, width, decomposed, dtype, complex_rotary=False)

    @torch.compiler.assume_constant_result  # dynamo calls it as it traces, keeping the answer: no graph branch
    def _cache_is_stale(self) -> bool:
        if self._cache_source is None:
            return True
        return not all(old.dtype == new.dtype and old.device == new.device and old.shape == new.shape
                       and torch.equal(old, new)
                       for old, new in zip(self._cache_source, (self.angle, self.decay)))

    def _build_fast_tables(self, height: int, width: int, decomposed: bool, dtype: torch.dtype,
                           complex_rotary: bool = True) -> FastTables:
        """The :class:`FastTables` of a grid, uncached: with one-dimensional decays if ``decomposed``,
        with a complex rotation where ``complex_rotary`` and ``dtype`` allow."""
        sin, cos = self.rotary(height, width)
        shape = (height, width, -1) if decomposed else (height, width, 1, 1, -1)
        if complex_rotary and dtype in COMPLEX_DTYPES:
            rotation = torch.complex(cos[..., ::2], sin[..., ::2]).reshape(shape)
            rotary = dict(rotation=rotation.to(COMPLEX_DTYPES[dtype]))
        else:
            sign = torch.tensor([-1.0, 1.0]).to(sin).repeat(sin.shape[-1] // 2)
            rotary = dict(cos=cos.reshape(shape).to(dtype), signed_sin=(sin * sign).reshape(shape).to(dtype))
        if decomposed:
            return FastTables(**rotary, mask_h=self.decay_1d(height)[None].to(dtype),
                              mask_w=self.decay_1d(width)[None].to(dtype))
        return FastTables(**rotary, mask=self.decay_2d(height, width)[None].to(dtype))

    def _evict(self) -> None:
        def size(tables: FastTables) -> int:
            return sum(t.numel() * t.element_size() for t in tables if t is not None)

        total = sum(size(tables) for tables in self._cache.values())
        while len(self._cache) > 1 and (len(self._cache) > self.cache_entries
                                        or total > self.cache_bytes):
            total -= size(self._cache.popitem(last=False)[1])
