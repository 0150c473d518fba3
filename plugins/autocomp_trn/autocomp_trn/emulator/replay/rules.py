"""The compiler's and the hardware's rules that several instructions share: where operands may
live, how a tile maps onto partitions, PSUM banks, engines, and the independence of an
affine_range loop's iterations. Each refuses with the rule's name and the kernel line."""

from __future__ import annotations

import numpy as np

from .. import dtypes, hardware as hw
from ..cost import ENGINE_OF
from .state import AP, Frame, fail


def onchip(ap: AP, what: str, line: int, buffers=("sbuf", "psum")) -> None:
    """``ap`` is in one of ``buffers`` and is a tile: partitions first, then free elements."""
    if ap.t.buffer not in buffers:
        names = " or ".join(b.upper() for b in buffers)
        fail(
            f"{what} must be in {names}, got {ap.t.buffer.upper()} ({ap.t.label})",
            "err_unsupported_memory",
            line,
        )
    t = ap.t
    n0, s0 = ap.dims[0]
    rel = ap.offset % (t.parts * t.free)
    p0, f0 = divmod(rel, t.free)
    if n0 > 1 and s0 != t.free:
        fail(
            f"{what}: the first axis of a tile must be the partition dim of {t.label} (no partition "
            "striding; move other axes to free dims)",
            "err_failed_to_infer_tile_from_local_tensor",
            line,
        )
    free_hi = f0 + sum((n - 1) * s for n, s in ap.dims[1:])
    if free_hi >= t.free or p0 + n0 > t.parts:
        fail(
            f"{what}: the access crosses partitions of {t.label}; the first axis must be the partition dim "
            "and the others free dims",
            "err_failed_to_infer_tile_from_local_tensor",
            line,
        )
    if n0 > hw.PMAX:
        fail(
            f"Size of partition dimension {n0} exceeds architecture limitation of {hw.PMAX}",
            "err_num_partition_exceed_arch_limit",
            line,
        )


def shape_eq(a: AP, b: AP, what: str, line: int) -> None:
    if a.shape != b.shape:
        fail(
            f"{what}: shapes {list(a.shape)} and {list(b.shape)} differ",
            "err_num_partition_mismatch",
            line,
        )


def pick_engine(attrs: dict, allowed: tuple[str, ...], default: str, line: int) -> str:
    """The engine an instruction runs on: the one it asks for, else ``default``."""
    e = ENGINE_OF.get(attrs.get("engine", ""), None) or default
    if e not in allowed:
        fail(f"this instruction cannot run on {e}", "err_unsupported_engine", line)
    return e


def elementwise_checks(engine: str, dsts, srcs, what: str, line: int) -> None:
    """Every operand on chip, and none in PSUM for GpSimd (which cannot reach it)."""
    for ap in dsts:
        onchip(ap, f"{what} output", line)
    for ap in srcs:
        onchip(ap, f"{what} input", line)
    if engine == "pool" and any(ap.t.buffer == "psum" for ap in (*dsts, *srcs)):
        fail("GpSimd cannot access PSUM", "err_unsupported_memory", line)
    one_fp8_flavour([*dsts, *srcs], what, line)


def one_fp8_flavour(aps, what: str, line: int) -> None:
    """The OCP float8_e4m3fn and the legacy float8_e4m3 are not mixed in one instruction
    (NKI 0.4)."""
    if len({ap.t.dtype for ap in aps} & dtypes.FP8_E4M3_FLAVOURS) > 1:
        fail(
            f"{what} mixes the OCP float8_e4m3fn with the legacy float8_e4m3 (a verification "
            "error since NKI 0.4)",
            "err_mixed_fp8_flavours",
            line,
        )


def psum_bank(d: AP, what: str, line: int) -> None:
    """An output TensorE writes fits one 2 KiB PSUM bank per partition."""
    t = d.t
    rel = d.offset % (t.parts * t.free)
    f0 = rel % t.free
    lo = f0 * t.itemsize
    hi = (f0 + sum((n - 1) * s for n, s in d.dims[1:])) * t.itemsize + t.itemsize - 1
    block_bytes = t.free * t.itemsize
    if hi - lo + 1 > hw.PSUM_BANK_BYTES or (
        lo // hw.PSUM_BANK_BYTES != hi // hw.PSUM_BANK_BYTES and block_bytes > hw.PSUM_BANK_BYTES
    ):
        fail(
            f"{what} spans {hi - lo + 1} bytes per partition: it must fit one 2 KiB PSUM bank "
            f"({hw.PSUM_FMAX} fp32)",
            "err_size_of_dimension_exceed_arch_limit",
            line,
        )


def injective(dims: list[tuple[int, int]]) -> bool:
    """No two indices of the access reach the same element (no overlap, no broadcast)."""
    extent = 0
    for n, s in sorted((d for d in dims if d[0] > 1), key=lambda d: d[1]):
        if s <= extent:
            return False
        extent += (n - 1) * s
    return True


def loop_checks(frames: list[Frame], dsts: list[AP], srcs: list[AP], acc: bool, line: int) -> None:
    """The iterations of each affine_range loop in progress are independent: none reads what
    another wrote, and none writes what another wrote except by += accumulation. Each loop
    marks the elements of the tensors from outside it with the iteration that wrote them
    (negative: accumulated)."""
    for f in frames:
        if f.kind != "affine":
            continue
        mark = f.it + 1
        for ap in srcs:
            if acc and any(ap.same(d) for d in dsts):
                continue
            owner = f.owners.get(ap.t.tid)
            if owner is None or len(ap.t.path) > f.depth:
                continue
            seen = ap.view_of(owner)
            if ((seen != 0) & (seen != mark) & (seen != -mark)).any():
                fail(
                    f"affine_range loop (line {f.line}) iteration {f.it} reads {ap.t.label} data written by "
                    "another iteration: affine_range iterations must be independent except for += "
                    "accumulation; use nl.sequential_range for a loop-carried dependency",
                    "err_loop_carried_dependency",
                    line,
                )
        for i, ap in enumerate(dsts):
            if len(ap.t.path) > f.depth:
                continue  # created inside this iteration
            owner = f.owners.get(ap.t.tid)
            if owner is None:
                owner = f.owners[ap.t.tid] = np.zeros(ap.t.size, dtype=np.int32)
            _mark_write(f, ap.view_of(owner), mark, acc and i == 0, ap.t.label, line)


def _mark_write(f: Frame, seen: np.ndarray, mark: int, acc: bool, label: str, line: int) -> None:
    if acc:
        if ((seen > 0) & (seen != mark)).any():
            fail(
                f"affine_range loop (line {f.line}) iteration {f.it} accumulates into {label} "
                "data that another iteration overwrote",
                "err_loop_carried_dependency",
                line,
            )
        seen[seen <= 0] = -mark
    else:
        if ((seen != 0) & (seen != mark) & (seen != -mark)).any():
            fail(
                f"affine_range loop (line {f.line}): different iterations write the same elements "
                f"of {label} (not a += accumulation); declare the buffer inside the loop or use "
                "nl.sequential_range",
                "err_unexpected_output_dependencies",
                line,
            )
        seen[...] = mark
