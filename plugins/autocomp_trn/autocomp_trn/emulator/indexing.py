"""Index expressions, masks and access patterns: how an NKI subscript becomes an access.

An *access pattern* (AP) addresses a tensor's row-major element space: ``offset`` plus, for
each axis of the resulting tile, a ``(size, stride)`` pair. Basic slices, ``nl.ds``, integer
indices, affine ``nl.arange``/``nl.mgrid`` expressions (``i * 128 + i_p``, ``i_w + i_kw``),
free-dim transposes and broadcasts are all APs, so the trusted replay needs to understand
only this one form.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass


class NkiError(Exception):
    """A kernel broke an NKI rule. ``code`` is the ``nki.errors`` name where one exists."""

    def __init__(self, message: str, code: str = "", line: int = 0) -> None:
        super().__init__(message)
        self.message, self.code, self.line = message, code, line

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.message}" + (f" [{self.code}]" if self.code else "")


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x != y and 1 not in (x, y):
            raise NkiError(
                f"index expressions of shapes {a} and {b} do not broadcast",
                "err_unsupported_index_expression",
            )
        out.append(max(x, y))
    return tuple(out)


def _pad(shape: tuple[int, ...], coeffs: tuple[int, ...], n: int) -> tuple[int, ...]:
    """The coefficients of an expression broadcast to ``n`` axes (new leading axes of size 1)."""
    return (0,) * (n - len(shape)) + coeffs


class IndexExpr:
    """``const + sum(coeffs[a] * axis_a)`` over the axes of a broadcast index grid."""

    __slots__ = ("coeffs", "const", "shape")

    def __init__(self, shape: tuple[int, ...], coeffs: tuple[int, ...], const: int = 0) -> None:
        self.shape, self.coeffs, self.const = shape, coeffs, const

    # -- construction helpers used by nl.arange / nl.mgrid
    @classmethod
    def axis(cls, size: int, start: int = 0) -> IndexExpr:
        return cls((size,), (1,), start)

    def __getitem__(self, key) -> IndexExpr:
        """``[:, None]`` / ``[None, :]`` place a 1-D arange on the partition or a free axis."""
        if not isinstance(key, tuple):
            key = (key,)
        shape, coeffs, src = [], [], 0
        for k in key:
            if k is None:
                shape.append(1)
                coeffs.append(0)
            elif isinstance(k, slice) and k == slice(None):
                shape.append(self.shape[src])
                coeffs.append(self.coeffs[src])
                src += 1
            else:
                raise NkiError(
                    "an nl.arange may only be indexed with ':' and None",
                    "err_cannot_assign_to_index",
                )
        if src != len(self.shape):
            raise NkiError("every axis of an nl.arange must appear once as ':'")
        return IndexExpr(tuple(shape), tuple(coeffs), self.const)

    def _combine(self, other, sign: int) -> IndexExpr:
        if isinstance(other, IndexExpr):
            shape = _broadcast(self.shape, other.shape)
            c1 = _pad(self.shape, self.coeffs, len(shape))
            c2 = _pad(other.shape, other.coeffs, len(shape))
            return IndexExpr(
                shape, tuple(a + sign * b for a, b in zip(c1, c2)), self.const + sign * other.const
            )
        if isinstance(other, int) and not isinstance(other, bool):
            return IndexExpr(self.shape, self.coeffs, self.const + sign * other)
        return NotImplemented

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return (-self)._combine(other, 1)

    def __neg__(self) -> IndexExpr:
        return IndexExpr(self.shape, tuple(-c for c in self.coeffs), -self.const)

    def __mul__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return IndexExpr(self.shape, tuple(c * other for c in self.coeffs), self.const * other)
        raise NkiError(
            "index expressions must be affine: only multiplication by an integer constant",
            "err_unsupported_index_expression",
        )

    __rmul__ = __mul__

    def _not_affine(self, *_):
        raise NkiError(
            "index expressions must be affine (// and % only where the result stays affine: no "
            "/, products of aranges, or // and % whose result wraps within the tile)",
            "err_unsupported_index_expression",
        )

    def _divmod(self, n) -> tuple[IndexExpr, IndexExpr]:
        """``self // n`` and ``self % n`` where both stay affine over the whole grid. With
        ``self = n * Y + R`` (Y from the coefficients divisible by ``n`` and the constant's
        quotient, R the rest), when R stays within one block ``[k n, (k + 1) n)``:
        ``self // n = Y + k`` and ``self % n = R - k n``. Anything else wraps: refused."""
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            self._not_affine()
        q0, r0 = divmod(self.const, n)
        whole = tuple(c // n if c % n == 0 else 0 for c in self.coeffs)
        rest = tuple(0 if c % n == 0 else c for c in self.coeffs)
        lo, hi = IndexExpr(self.shape, rest, r0).bounds()
        k = lo // n
        if hi // n != k:
            self._not_affine()
        return IndexExpr(self.shape, whole, q0 + k), IndexExpr(self.shape, rest, r0 - k * n)

    def __floordiv__(self, n) -> IndexExpr:
        return self._divmod(n)[0]

    def __mod__(self, n) -> IndexExpr:
        return self._divmod(n)[1]

    __rfloordiv__ = __rmod__ = __truediv__ = __rtruediv__ = __pow__ = _not_affine

    def _compare(self, other, op: str) -> Mask:
        diff = self - other if isinstance(other, (IndexExpr, int)) else None
        if diff is None or isinstance(other, bool):
            raise NkiError(
                "masks compare index expressions with integers or other index expressions",
                "err_unsupported_expression_in_mask",
            )
        return Mask(((diff.shape, diff.coeffs, diff.const, op),))

    def __lt__(self, other):
        return self._compare(other, "<")

    def __le__(self, other):
        return self._compare(other, "<=")

    def __gt__(self, other):
        return self._compare(other, ">")

    def __ge__(self, other):
        return self._compare(other, ">=")

    def __eq__(self, other):  # type: ignore[override]
        return self._compare(other, "==")

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self):
        raise NkiError(
            "control flow cannot depend on an nl.arange",
            "err_control_flow_condition_depending_on_arange",
        )

    def __index__(self):
        raise NkiError(
            "an nl.arange is not a Python integer", "err_control_flow_condition_depending_on_arange"
        )

    def __iter__(self):
        raise NkiError("an nl.arange cannot be iterated over: use nl.affine_range for loops")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def bounds(self) -> tuple[int, int]:
        lo = hi = self.const
        for n, c in zip(self.shape, self.coeffs):
            if c > 0:
                hi += c * (n - 1)
            else:
                lo += c * (n - 1)
        return lo, hi


class MGrid:
    """``nl.mgrid[0:128, 0:512]``: dense index grids, unpackable or as ``.p`` / ``.x``."""

    def __getitem__(self, key) -> Grid:
        if not isinstance(key, tuple):
            key = (key,)
        sizes = []
        for k in key:
            if not isinstance(k, slice) or k.step not in (None, 1):
                raise NkiError("nl.mgrid takes unit-step slices, e.g. nl.mgrid[0:128, 0:512]")
            sizes.append(((k.start or 0), k.stop))
        shape = tuple(stop - start for start, stop in sizes)
        exprs = []
        for a, (start, _) in enumerate(sizes):
            coeffs = tuple(1 if b == a else 0 for b in range(len(shape)))
            exprs.append(IndexExpr(shape, coeffs, start))
        return Grid(exprs)


class Grid(tuple):
    @property
    def p(self) -> IndexExpr:
        return self[0]

    @property
    def x(self) -> IndexExpr:
        return self[1]

    @property
    def y(self) -> IndexExpr:
        return self[2]

    @property
    def z(self) -> IndexExpr:
        return self[3]


_COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}


@dataclass(frozen=True)
class Mask:
    """A conjunction of affine comparisons ``expr OP 0`` joined with ``&``."""

    terms: tuple

    def __and__(self, other: Mask) -> Mask:
        if isinstance(other, bool):
            return self if other else FALSE_MASK
        if not isinstance(other, Mask):
            raise NkiError("masks combine with & only", "err_unsupported_expression_in_mask")
        return Mask(self.terms + other.terms)

    __rand__ = __and__

    def __bool__(self):
        raise NkiError(
            "use & (not 'and') to combine mask conditions; a mask is not a Python bool",
            "err_ambiguous_tensor_truth_value",
        )

    def axis_ranges(self, rank: int) -> dict[int, tuple[int, int]] | None:
        """Per tile axis, the index range the mask keeps; None when it keeps nothing."""
        ranges: dict[int, tuple[int, int]] = {}
        for shape, coeffs, const, op in self.terms:
            if op == "never":
                return None
            if len(shape) != rank:
                raise NkiError(
                    f"a mask of rank {len(shape)} applied to a tile of rank {rank}",
                    "err_unsupported_expression_in_mask",
                )
            axes = [a for a, c in enumerate(coeffs) if c != 0]
            if len(axes) > 1:
                raise NkiError(
                    "each mask comparison may involve one tile axis (this emulator does not "
                    "support masks coupling two axes: use nisa.affine_select)",
                    "err_unsupported_expression_in_mask",
                )
            if not axes:
                if not _COMPARE[op](const, 0):
                    return None
                continue
            a = axes[0]
            n, c = shape[a], coeffs[a]
            keep = [x for x in range(n) if _COMPARE[op](c * x + const, 0)]
            if not keep:
                return None
            if keep[-1] - keep[0] + 1 != len(keep):
                raise NkiError(
                    "a mask must keep a contiguous index range",
                    "err_unsupported_expression_in_mask",
                )
            lo, hi = ranges.get(a, (0, n))
            ranges[a] = (max(lo, keep[0]), min(hi, keep[-1] + 1))
            if ranges[a][0] >= ranges[a][1]:
                return None
        return ranges


FALSE_MASK = Mask((((), (), 0, "never"),))


class DynSlice:
    """``nl.ds(start, size)``: the slice ``start:start+size``."""

    __slots__ = ("size", "start")

    def __init__(self, start: int, size: int) -> None:
        if not isinstance(start, int) or not isinstance(size, int):
            raise NkiError(
                "nl.ds(start, size) takes integers (runtime offsets need indirect DMA)",
                "err_dynamic_control_flow_not_supported",
            )
        self.start, self.size = start, size


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n
    return tuple(reversed(strides))


def reshape_pattern(
    dims: list[tuple[int, int]], shape: tuple[int, ...]
) -> list[tuple[int, int]] | None:
    """The ``(size, stride)`` pattern that walks the elements of ``dims`` in the same order with
    the shape ``shape`` (same element count), or None when no single pattern can: a reshape of
    a strided view may split any dim and merge dims only where they are contiguous with each
    other in storage (what ``flatten_dims`` requires), as NumPy's no-copy reshape does."""
    old = [(n, s) for n, s in dims if n != 1]
    new = [i for i, n in enumerate(shape) if n != 1]
    strides = [0] * len(shape)
    oi = ni = 0
    while oi < len(old) and ni < len(new):
        # the smallest run of old dims and new dims holding the same number of elements
        have, want = old[oi][0], shape[new[ni]]
        oj, nj = oi + 1, ni + 1
        while have != want:
            if want < have:
                want *= shape[new[nj]]
                nj += 1
            else:
                have *= old[oj][0]
                oj += 1
        if any(old[k][1] != old[k + 1][0] * old[k + 1][1] for k in range(oi, oj - 1)):
            return None
        stride = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            strides[new[k]] = stride
            stride *= shape[new[k]]
        oi, ni = oj, nj
    # a size-1 dim takes the stride row-major order gives it, so later flattens still see
    # its neighbours as contiguous
    inner = (1, 1)  # (size, stride) of the next dim inwards
    for i in range(len(shape) - 1, -1, -1):
        if shape[i] == 1:
            strides[i] = inner[0] * inner[1]
        inner = (shape[i], strides[i])
    return list(zip(shape, strides))


def subscript(
    offset: int, dims: list[tuple[int, int]], key, bounds: dict | None = None
) -> tuple[int, list[tuple[int, int]]]:
    """Apply a subscript to an access ``(offset, [(size, stride), ...])``. Affine index expressions
    may reach past the tensor when a mask will cover them: ``bounds`` (if given) receives, per
    result axis, the index range that stays inside, and the instruction's mask must keep to it."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        fill = len(dims) - (len(key) - 1)
        key = key[:i] + (slice(None),) * fill + key[i + 1 :]
    if len(key) > len(dims):
        raise NkiError(
            f"too many indices ({len(key)}) for a tile of rank {len(dims)}",
            "err_tensor_access_out_of_bound",
        )
    advanced = any(isinstance(k, IndexExpr) for k in key)
    if advanced:
        return _advanced(offset, dims, key, bounds)
    out: list[tuple[int, int]] = []
    for axis, (n, s) in enumerate(dims):
        k = key[axis] if axis < len(key) else slice(None)
        if isinstance(k, DynSlice):
            k = slice(k.start, k.start + k.size)
        if isinstance(k, bool) or not isinstance(k, (int, slice)):
            if hasattr(k, "__index__") and not isinstance(k, bool):
                k = k.__index__()
            else:
                raise NkiError(
                    f"unsupported index {k!r} (use ints, slices, nl.ds or nl.arange)",
                    "err_unsupported_index_expression",
                )
        if isinstance(k, int):
            if not -n <= k < n:  # standard Python indexing: -1 is the last
                raise NkiError(
                    f"index {k} is out of bounds for an axis of size {n}",
                    "err_tensor_access_out_of_bound",
                )
            offset += (k % n) * s
            continue
        if k.step is not None and k.step < 0:
            raise NkiError(
                f"slice step {k.step}: negative (reversing) steps are not emulated; NKI's "
                "documented views (slice, nl.ds, reshape_dim) step forward",
                "err_unsupported_api",
            )
        start, stop, step = k.start or 0, n if k.stop is None else k.stop, k.step or 1
        # standard Python slicing counts negative bounds from the end (never clamps: a bound
        # past the axis stays an error)
        start, stop = (start + n if start < 0 else start), (stop + n if stop < 0 else stop)
        if step <= 0 or start < 0 or stop > n or start > stop:
            raise NkiError(
                f"slice {start}:{stop}:{step} is out of bounds for an axis of size {n}",
                "err_tensor_access_out_of_bound",
            )
        offset += start * s
        out.append(((stop - start + step - 1) // step, s * step))
    return offset, out


def _advanced(
    offset: int, dims: list[tuple[int, int]], key, bounds: dict | None = None
) -> tuple[int, list[tuple[int, int]]]:
    if len(key) != len(dims):
        raise NkiError(
            "index every dimension when indexing with nl.arange/nl.mgrid expressions",
            "err_unsupported_mixing_basic_advanced_tensor_indexing",
        )
    shape: tuple[int, ...] = ()
    for k in key:
        if isinstance(k, slice) or isinstance(k, DynSlice):
            raise NkiError(
                "slices and nl.arange expressions cannot be mixed in one subscript",
                "err_unsupported_mixing_basic_advanced_tensor_indexing",
            )
        if isinstance(k, IndexExpr):
            if k.ndim < 2:
                raise NkiError(
                    "a 1-D nl.arange cannot index a tile: shape it with [:, None] or [None, :]",
                    "err_1d_arange_not_supported",
                )
            shape = _broadcast(shape, k.shape)
        elif isinstance(k, bool) or not isinstance(k, int):
            raise NkiError(f"unsupported index {k!r}", "err_unsupported_index_expression")
    strides = [0] * len(shape)
    for (n, s), k in zip(dims, key):
        if isinstance(k, int):
            if not -n <= k < n:  # standard Python indexing: -1 is the last
                raise NkiError(
                    f"index {k} is out of bounds for an axis of size {n}",
                    "err_tensor_access_out_of_bound",
                )
            offset += (k % n) * s
            continue
        lo, hi = k.bounds()
        kcoeffs = _pad(k.shape, k.coeffs, len(shape))
        if lo < 0 or hi >= n:
            axes = [a for a, c in enumerate(kcoeffs) if c]
            if bounds is None or len(axes) != 1:
                raise NkiError(
                    f"index expression spans {lo}..{hi}, out of bounds for an axis of size {n}",
                    "err_tensor_access_out_of_bound",
                )
            a, c = axes[0], kcoeffs[axes[0]]
            inside = [x for x in range(shape[a]) if 0 <= k.const + c * x < n]
            if not inside:
                raise NkiError(
                    f"index expression spans {lo}..{hi}, out of bounds for an axis of size {n}",
                    "err_tensor_access_out_of_bound",
                )
            vlo, vhi = bounds.get(a, (0, shape[a]))
            bounds[a] = (max(vlo, inside[0]), min(vhi, inside[-1] + 1))
        offset += k.const * s
        for a, c in enumerate(kcoeffs):
            strides[a] += c * s
    if any(st < 0 for st in strides):
        raise NkiError(
            "negative index strides are not supported", "err_unsupported_index_expression"
        )
    return offset, list(zip(shape, strides))
