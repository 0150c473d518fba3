"""The instructions that move data and the TensorE ones: DMA, matmul, transpose and the
partition broadcast. Each takes the core, its validated destinations and sources, and the
instruction's attributes; it checks the rules, computes the result and schedules the cost."""

from __future__ import annotations

import math

import numpy as np

from ... import dtypes, hardware as hw
from .. import pricing
from ..rules import onchip, one_fp8_flavour, pick_engine, psum_bank
from ..state import AP, Core, fail
from .generations import require


def dma(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    if d.shape != s.shape:
        fail(
            f"DMA source {list(s.shape)} and destination {list(d.shape)} shapes differ",
            "err_store_dst_shape_smaller_than_other_shape",
            core.line,
        )
    _dma_operands(core, d, s, attrs.get("dge"))
    acc = bool(attrs.get("acc"))
    if core.numeric:
        d.write(s.read() if (acc or d.t.dtype != s.t.dtype) else s.view(), acc)
    pricing.dma(core, d, s, "dma_transpose" if attrs.get("transpose") else "dma")


def _dma_operands(core: Core, d: AP, s: AP, dge) -> None:
    """A DMA's operands are in HBM or SBUF (no DMA from or to PSUM, NKI 0.3); the hardware DGE
    (NeuronCore-v3+) moves without casting."""
    one_fp8_flavour([d, s], "DMA", core.line)
    for ap, what in ((d, "DMA destination"), (s, "DMA source")):
        if ap.t.buffer == "psum":
            fail(
                f"{what} is in PSUM: DMA moves HBM and SBUF data only, there is no DMA from or "
                "to PSUM (NKI 0.3; copy PSUM to SBUF first)",
                "err_unsupported_memory",
                core.line,
            )
        if ap.t.buffer == "sbuf":
            onchip(ap, what, core.line, ("sbuf",))
    if dge is None:
        return
    if dge not in ("none", "swdge", "hwdge"):
        raise ValueError("dge")
    if dge == "hwdge":
        if core.gen.nc_version < 3:
            fail(
                f"dge_mode=hwdge needs NeuronCore-v3 or newer; this kernel targets {core.gen.name}",
                hw.UNSUPPORTED,
                core.line,
            )
        if d.t.dtype != s.t.dtype:
            fail(
                f"DMA with dge_mode=hwdge cannot cast {s.t.dtype} to {d.t.dtype}: the hardware "
                "DGE needs matching dtypes (NKI 0.3)",
                "err_dma_dtype_mismatch",
                core.line,
            )


#: the permutation dma_transpose applies, by rank (nisa.dma_transpose)
DMA_TRANSPOSE_AXES = {2: [1, 0], 3: [2, 1, 0], 4: [3, 1, 2, 0]}


def dma_transpose(core: Core, dsts, srcs, attrs) -> None:
    """The current API's DMA transpose into SBUF; ``axes`` has exactly src's rank (NKI 0.4)."""
    (d,), (s,) = dsts, srcs
    rank = len(s.dims)
    axes = attrs.get("axes")
    if axes != DMA_TRANSPOSE_AXES.get(rank) or len(d.dims) != rank:
        fail(
            f"dma_transpose of a rank-{rank} src takes axes {DMA_TRANSPOSE_AXES.get(rank)} and a "
            f"rank-{rank} dst exactly (NKI 0.4), got axes {axes} and a rank-{len(d.dims)} dst",
            "err_dma_transpose_rank",
            core.line,
        )
    want = tuple(s.shape[a] for a in axes)
    if d.shape != want:
        fail(
            f"dma_transpose dst {list(d.shape)} is not the transposed src {list(want)}",
            "err_store_dst_shape_smaller_than_other_shape",
            core.line,
        )
    if s.t.buffer not in ("hbm", "sbuf") or d.t.buffer != "sbuf":
        fail(
            "dma_transpose reads HBM or SBUF and writes SBUF",
            "err_unsupported_memory",
            core.line,
        )
    _dma_operands(core, d, s, attrs.get("dge"))
    if attrs.get("dge") == "hwdge" and (s.shape[0] != 16 or s.shape[-1] % 128 or s.t.itemsize != 2):
        fail(
            "dma_transpose with dge_mode=hwdge needs src.shape[0] == 16, src.shape[-1] a multiple "
            f"of 128 and a 2-byte dtype, got {list(s.shape)} {s.t.dtype}",
            "err_dma_transpose_hwdge",
            core.line,
        )
    if core.numeric:
        d.write(s.read().transpose(0, *(a + 1 for a in axes)))
    pricing.dma(core, d, s, "dma_transpose")


def matmul(core: Core, dsts, srcs, attrs) -> None:
    (d,), (st, mv) = dsts, srcs
    if attrs.get("transpose"):
        _transposing_matmul(core, d, st, mv, attrs)
        return
    k1, m, n = _matmul_operands(core, d, st, mv)
    acc = attrs.get("acc", False)
    if acc not in (True, False, "auto", "checked"):
        raise ValueError("acc")
    if acc == "checked" and d.t.writes == 0:
        # the simulator warns; the hardware adds to whatever the PSUM held
        fail(
            "nc_matmul(accumulate=True) onto a PSUM tile nothing has written: the first matmul "
            "of an accumulation group must overwrite (accumulate=None or False)",
            "err_accumulate_uninitialized_psum",
            core.line,
        )
    if core.numeric:
        _matmul_values(d, st, mv, acc)
    fp32 = st.t.dtype not in dtypes.LOW_PRECISION
    factor = 4 if fp32 else 1
    if _onezero_hint(core, attrs.get("onezero"), st, mv) and fp32:
        factor = 2
    cycles = max(core.gen.min_ii, n) * factor
    if _double_row(core, attrs.get("perf"), st, mv):
        cycles = max(core.gen.min_ii, n / 2)  # two fp8 pairs per PE: twice the throughput
    core.sched.report.flops += 2.0 * k1 * m * n
    pricing.compute(core, "pe", "matmul", cycles, [d], [st, mv])


def _double_row(core: Core, perf, st: AP, mv: AP) -> bool:
    """Whether a matmul runs in the FP8 double-row performance mode (NeuronCore-v3+, both
    operands fp8: nisa.matmul_perf_mode.double_row)."""
    if perf is None:
        return False
    if perf != "double_row":
        raise ValueError("perf")
    if core.gen.nc_version < 3:
        fail(
            f"nc_matmul perf_mode=double_row needs NeuronCore-v3 or newer; this kernel targets "
            f"{core.gen.name}",
            hw.UNSUPPORTED,
            core.line,
        )
    if not {st.t.dtype, mv.t.dtype} <= dtypes.FP8:
        fail(
            f"nc_matmul perf_mode=double_row packs fp8 pairs: both operands must be fp8, got "
            f"{st.t.dtype} and {mv.t.dtype}",
            "err_unsupported_dtype",
            core.line,
        )
    return True


def _transposing_matmul(core: Core, d: AP, st: AP, mv: AP, attrs: dict) -> None:
    """nc_matmul(is_transpose=True): stationary [K, M] times an identity moving [K, K] passes
    stationary through TensorE transposed, bit-exact, into a PSUM dst [M, K] of its dtype (the
    TensorE transpose nc_transpose makes). A moving that is not an identity is refused."""
    if attrs.get("acc") not in (None, False, "auto") or attrs.get("perf"):
        raise ValueError("transpose")
    for ap, what in ((st, "matmul stationary"), (mv, "matmul moving")):
        onchip(ap, what, core.line, ("sbuf",))
    onchip(d, "matmul output", core.line, ("psum",))
    (k, m), (k2, n) = st.shape, mv.shape
    if len(st.dims) != 2 or (k2, n) != (k, k) or d.shape != (m, k) or m > 128 or k > 128:
        fail(
            f"nc_matmul(is_transpose=True) takes stationary [K, M <= 128], an identity moving "
            f"[K, K] and a dst [M, K]; got {list(st.shape)}, {list(mv.shape)}, {list(d.shape)}",
            "err_num_partition_mismatch",
            core.line,
        )
    if d.t.dtype != st.t.dtype:
        fail(
            f"nc_matmul(is_transpose=True) writes stationary's dtype ({st.t.dtype}), dst is {d.t.dtype}",
            "err_unsupported_dtype",
            core.line,
        )
    psum_bank(d, "transpose output", core.line)
    if core.numeric:
        if not (mv.read() == np.eye(k, dtype=np.float32)).all():
            fail(
                "nc_matmul(is_transpose=True) needs an identity matrix as moving",
                "err_transpose_needs_identity",
                core.line,
            )
        d.write(st.view().transpose(0, 2, 1))
    fp32 = st.t.dtype not in dtypes.LOW_PRECISION
    pricing.compute(
        core, "pe", "transpose", max(core.gen.min_ii, k) * (4 if fp32 else 1), [d], [st, mv]
    )


def _matmul_operands(core: Core, d: AP, st: AP, mv: AP) -> tuple[int, int, int]:
    """The rules of a matmul's operands; returns its contraction and output sizes."""
    one_fp8_flavour([d, st, mv], "nc_matmul", core.line)
    for ap, what in ((st, "matmul stationary"), (mv, "matmul moving")):
        if ap.t.buffer != "sbuf":
            fail(
                f"{what} is in {ap.t.buffer.upper()}: TensorE reads SBUF only",
                "err_unsupported_memory",
                core.line,
            )
        onchip(ap, what, core.line, ("sbuf",))
        if len(ap.dims) != 2:
            fail(f"{what} must be a 2-D tile", "err_exceed_max_supported_dimension", core.line)
    if d.t.buffer != "psum":
        fail(
            "matmul output must be in PSUM: TensorE writes PSUM only",
            "err_unsupported_memory",
            core.line,
        )
    onchip(d, "matmul output", core.line, ("psum",))
    (k1, m), (k2, n) = st.shape, mv.shape
    if k1 != k2:
        fail(
            f"matmul contraction (partition) sizes differ: stationary {k1}, moving {k2}",
            "err_num_partition_mismatch",
            core.line,
        )
    if m > hw.GEMM_STATIONARY_FMAX:
        fail(
            f"matmul stationary free size {m} exceeds gemm_stationary_fmax {hw.GEMM_STATIONARY_FMAX}",
            "err_size_of_dimension_exceed_arch_limit",
            core.line,
        )
    if n > hw.GEMM_MOVING_FMAX:
        fail(
            f"matmul moving free size {n} exceeds gemm_moving_fmax {hw.GEMM_MOVING_FMAX} (one PSUM bank)",
            "err_size_of_dimension_exceed_arch_limit",
            core.line,
        )
    if d.shape != (m, n):
        fail(
            f"matmul output tile {list(d.shape)} does not match [{m}, {n}]",
            "err_num_partition_mismatch",
            core.line,
        )
    if d.t.dtype == "bfloat16":  # NKI 0.5: bf16 destinations of up to 8,192 elements (16 KiB)
        require(core, "bf16_psum_matmul", "an nc_matmul into a bfloat16 PSUM tile")
        if math.prod(d.shape[1:]) > 8192:
            fail(
                f"a bf16 matmul output holds at most 8192 elements per partition, got {list(d.shape)}",
                "err_size_of_dimension_exceed_arch_limit",
                core.line,
            )
    elif d.t.dtype != "float32":
        fail(
            "matmul accumulates in fp32: the PSUM output must be float32 (or bfloat16)",
            "err_unsupported_dtype",
            core.line,
        )
    else:
        psum_bank(d, "matmul output", core.line)
    low = {st.t.dtype in dtypes.LOW_PRECISION, mv.t.dtype in dtypes.LOW_PRECISION}
    if len(low) > 1:
        fail(
            f"matmul operands mix fp32 with 8/16-bit types ({st.t.dtype}, {mv.t.dtype})",
            "err_unsupported_dtype",
            core.line,
        )
    return k1, m, n


def _matmul_values(d: AP, st: AP, mv: AP, acc) -> None:
    """Write (or accumulate, ``acc``) ``st.T @ mv`` into ``d``; ``"auto"``: accumulate into
    the elements an earlier matmul wrote, overwrite the others (v2)."""
    r = np.matmul(st.read().transpose(0, 2, 1), mv.read())
    if acc == "auto":
        if d.t.written is None:
            d.t.written = np.zeros(d.t.size, dtype=bool)
        seen = d.view_of(d.t.written)
        view = d.view()
        with np.errstate(all="ignore"):
            view[...] = np.where(seen[None], view.astype(np.float32) + r, r)
        seen[...] = True
    else:
        d.write(r, bool(acc))


def _onezero_hint(core: Core, hint, st: AP, mv: AP) -> bool:
    """Whether a matmul's 0/1 hint (``is_*_onezero``) may be priced: only when every hinted
    operand holds only 0 and 1 on every seed. A false hint is refused (the hardware would
    compute something else); unchecked (trace-only mode), it is priced as no hint."""
    if not hint:
        return False
    names = ["stationary", "moving"] if hint is True else hint
    if not isinstance(names, list) or not set(names) <= {"stationary", "moving"}:
        raise ValueError("onezero")
    if not core.numeric:
        return False
    for name in names:
        values = (st if name == "stationary" else mv).read()
        if not np.all((values == 0) | (values == 1)):
            fail(
                f"is_{name}_onezero=True, but the {name} operand holds values other than "
                "0 and 1: a false hint is refused",
                "err_false_hint",
                core.line,
            )
    return True


def transpose(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    engine = pick_engine(attrs, ("pe", "dve"), "pe", core.line)
    one_fp8_flavour([d, s], "nc_transpose", core.line)
    if len(s.dims) != 2 or len(d.dims) != 2:
        fail("transpose takes a 2-D tile", "err_exceed_max_supported_dimension", core.line)
    p, f = s.shape
    if d.shape != (f, p):
        fail(
            f"transpose output {list(d.shape)} is not [{f}, {p}]",
            "err_num_partition_mismatch",
            core.line,
        )
    if engine == "pe":
        if s.t.buffer != "sbuf":
            fail("TensorE transpose reads SBUF only", "err_unsupported_memory", core.line)
        if d.t.buffer != "psum":
            fail("TensorE transpose writes PSUM only", "err_unsupported_memory", core.line)
        if p > 128 or f > 128:
            fail(
                f"TensorE transpose is limited to 128x128, got {p}x{f}",
                "err_size_of_dimension_exceed_arch_limit",
                core.line,
            )
        psum_bank(d, "transpose output", core.line)
    elif p > 32 or f > 32:
        fail(
            f"VectorE transpose is limited to 32x32, got {p}x{f}",
            "err_size_of_dimension_exceed_arch_limit",
            core.line,
        )
    onchip(s, "transpose input", core.line)
    onchip(d, "transpose output", core.line)
    if core.numeric:
        d.write(s.read().transpose(0, 2, 1))
    fp32 = s.t.dtype not in dtypes.LOW_PRECISION
    if engine == "pe":
        pricing.compute(
            core, "pe", "transpose", max(core.gen.min_ii, p) * (4 if fp32 else 1), [d], [s]
        )
    else:
        pricing.compute(core, "dve", "transpose", f, [d], [s])


def pbroadcast(core: Core, dsts, srcs, attrs) -> None:
    (d,), (s,) = dsts, srcs
    if s.dims[0][0] != 1 or s.shape[1:] != d.shape[1:]:
        raise ValueError("pbroadcast shapes")
    onchip(s, "partition broadcast source", core.line, ("sbuf",))
    onchip(d, "partition broadcast output", core.line, ("psum",))
    psum_bank(d, "partition broadcast output", core.line)
    if core.numeric:
        d.write(np.broadcast_to(s.read(), (core.seeds, *d.shape)))
    free = math.prod(d.shape[1:])
    pricing.compute(core, "pe", "partition_broadcast", max(core.gen.min_ii, free), [d], [s])
