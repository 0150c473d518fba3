"""What an instruction costs: its engine cycles, the regions it reads and writes, and its place
in the schedule (``cost.Scheduler``); the rates come from nki.md section 5 and the nisa docs."""

from __future__ import annotations

import math
import time

import numpy as np

from .. import hardware as hw
from .state import AP, Core, free

# VectorE cycles per element for each instruction kind (nki.md 5.1)
DVE_K = {
    "tensor_tensor": 2.0,
    "tensor_scalar": 1.0,
    "tensor_reduce": 1.0,
    "tensor_copy": 1.0,
    "memset": 1.0,
    "select": 2.0,
    "scan": 2.0,
    "reciprocal": 8.0,
    "transpose": 1.0,
    "partition_reduce": 1.0,
    "iota": 1.0,
    "affine_select": 1.0,
}
#: 2-byte float dtypes, the ones the engines' performance modes speed up (plus fp8 on v4)
PERF_DTYPES = {"bfloat16", "float16"}
PERF_DTYPES_V4 = PERF_DTYPES | {"float8_e4m3", "float8_e5m2", "float8_e4m3fn"}
POOL_FIXED = {"iota": 150, "affine_select": 150}


def box(ap: AP):
    """The rows and columns of its tensor's regions an access touches."""
    t = ap.t
    if t.buffer == "hbm":
        c = t.shape[-1]
        r0, r1 = ap.offset // c, ap.hi // c + 1
        c0 = ap.offset % c
        extent = sum((n - 1) * s for n, s in ap.dims if s % c)
        if all(s < c for n, s in ap.dims if s % c and n > 1) and c0 + extent < c:
            return t.regions, r0, r1, c0, c0 + extent + 1
        return t.regions, r0, r1, 0, c
    block_elems = t.parts * t.free
    b, rel = divmod(ap.offset, block_elems)
    p0, f0 = divmod(rel, t.free)
    n0 = ap.dims[0][0]
    extent = sum((n - 1) * s for n, s in ap.dims[1:])
    return t.regions, b * t.parts + p0, b * t.parts + p0 + n0, f0, f0 + extent + 1


def compute(
    core: Core,
    engine: str,
    kind: str,
    elems: float,
    dsts,
    srcs,
    extra_cycles: int = 0,
    k: float | None = None,
) -> float:
    """Cost one instruction and schedule it; returns when it ends. ``k``: cycles per element
    where the instruction's own rate differs from its kind's (``DVE_K``). An iteration of a
    vectorized loop adds its work to the loop's fused instruction, which issues with the last
    iteration (until then this returns 0: nothing reads the end of such an instruction)."""
    t = time.perf_counter()
    lane = core.lanes.get(core.index)
    dead = core.index in core.dead and lane is None  # priced after the schedule (dead.py)
    reads, writes = [box(a) for a in srcs], [box(a) for a in dsts]
    if lane is not None:
        key = (lane.group, lane.position)
        done, r, w = core.vector_pending.pop(key, (0.0, [], []))
        done, r, w = done + elems, r + reads, w + writes
        if not lane.last:
            core.vector_pending[key] = (done, r, w)
            core.cost_s += time.perf_counter() - t
            return 0.0
        elems, reads, writes = done, r, w
        rep = core.sched.report
        rep.vectorized_instructions += lane.trips
        rep.vectorized_loops += lane.position == 0
    cycles, exposed, floor = cycles_of(core, engine, kind, elems, dsts, srcs, extra_cycles, k)
    if dead:
        end = 0.0
        core.sched.dead(engine, cycles / core.sched.clock[engine], kind)
    else:
        end = core.sched.compute(engine, cycles, reads, writes, kind, exposed)
    if floor:  # its cost is the engine's fixed floor, not its elements
        rep = core.sched.report
        rep.floor_ns[engine] = rep.floor_ns.get(engine, 0.0) + cycles / core.sched.clock[engine]
        rep.floor_instructions[engine] = rep.floor_instructions.get(engine, 0) + 1
    core.cost_s += time.perf_counter() - t
    return end


def merged_into_activation(core: Core, act_of: dict[int, int], d: AP, kind: str) -> bool:
    """Whether the activation the instruction being replayed merges into (``act_of``: instruction
    -> activation, from ``Fusions``) wrote ``d`` itself: then ``d`` is ready when that activation
    ends, and the instruction is not issued."""
    act = act_of.get(core.index)
    if act is None or act not in core.fused_end:
        return False
    core.sched.commit(core.fused_end[act], "act", [box(d)], f"{kind} (fused)")
    return True


def not_issued(
    core: Core, merge: str, engine: str, kind: str, elems: float, dsts, srcs, **kw
) -> None:
    """Record the engine time an instruction the compiler merges away would have cost."""
    cycles, *_ = cycles_of(core, engine, kind, elems, dsts, srcs, kw.get("extra", 0), kw.get("k"))
    fused = core.sched.report.fused_ns
    fused[merge] = fused.get(merge, 0.0) + cycles / core.sched.clock[engine]


def cycles_of(
    core: Core,
    engine: str,
    kind: str,
    elems: float,
    dsts,
    srcs,
    extra_cycles: int,
    k: float | None,
) -> tuple[float, float, bool]:
    """An instruction's engine cycles; the cycles it adds when it reads what its engine's
    previous instruction wrote (a latency the pipeline hides behind independent work); and
    whether its elements take less than the engine's minimum initiation interval."""
    g = core.gen
    if engine == "pe":
        return elems, 0.0, False
    if k is None:
        k = DVE_K.get(kind, 1.0) if engine in ("dve", "pool") else 1.0
    if g.nc_version >= 3 and kind in ("tensor_copy", "tensor_scalar"):
        k /= perf_mode(g.nc_version, engine, (*dsts, *srcs))
    # the operands' access latency overlaps the engine's previous instruction, unless
    # this one reads what that one wrote (back-to-back dependent)
    cycles = max(g.min_ii, k * elems) + extra_cycles
    exposed = max(g.min_ii, k * elems + g.access_cycles) - max(g.min_ii, k * elems)
    if engine == "act":
        cycles += g.act_fixed_cycles
    if any(ap.dims[-1][1] * ap.t.itemsize > 16 and ap.dims[-1][0] > 1 for ap in (*dsts, *srcs)):
        cycles += k * elems  # strided minor access runs at half bandwidth
    return cycles, exposed, k * elems < g.min_ii


def perf_mode(nc_version: int, engine: str, aps) -> float:
    """How much faster a tensor_copy or tensor_scalar runs in the engine's performance mode
    (VectorE on NeuronCore-v3+, ScalarE on -v4+), which the hardware turns on by itself. Trainium2
    Architecture Guide for NKI, "Vector Engine Performance Mode": 4x over NeuronCore-v2 when every
    operand is BF16/FP16, in SBUF, with contiguous innermost elements; 2x when the operands are
    BF16/FP16 but not contiguous, or contiguous with one in PSUM. Trainium3 guide: VectorE also for
    FP8; ScalarE "up to 2x" for BF16/FP16."""
    dtypes = PERF_DTYPES_V4 if nc_version >= 4 else PERF_DTYPES
    if not aps or any(ap.t.dtype not in dtypes for ap in aps):
        return 1.0
    if engine == "act":
        return 2.0 if nc_version >= 4 else 1.0
    if engine != "dve":
        return 1.0
    contiguous = all(ap.dims[-1][1] == 1 or ap.dims[-1][0] == 1 for ap in aps)
    in_psum = sum(ap.t.buffer == "psum" for ap in aps)
    if not in_psum:
        return 4.0 if contiguous else 2.0
    return 2.0 if contiguous and in_psum == 1 else 1.0


def dma(core: Core, d: AP, s: AP, kind: str) -> None:
    """Schedule a DMA from ``s`` to ``d`` on the queues of the partitions it moves."""
    onchip = d if d.t.buffer == "sbuf" else s if s.t.buffer == "sbuf" else None
    elems = math.prod(d.shape)
    nbytes = elems * max(d.t.itemsize, s.t.itemsize)
    if onchip is not None:
        parts = onchip.dims[0][0]
        p0 = (onchip.offset % (onchip.t.parts * onchip.t.free)) // onchip.t.free
    else:
        parts, p0 = min(hw.PMAX, d.shape[0]), 0
    runs = max(_runs(d), _runs(s), parts)
    hbm_bytes = (elems * d.t.itemsize if d.t.buffer == "hbm" else 0) + (
        elems * s.t.itemsize if s.t.buffer == "hbm" else 0
    )
    if runs >= elems > parts:
        core.sched.report.strided_dmas += 1
    t = time.perf_counter()
    load = d.t.buffer == "sbuf" and s.t.buffer == "hbm"
    if load and core.sched.policy.nki_allocation:
        tile = d.t  # its declaration: line, shape, dtype and depth of loops
        key = (tile.line, tile.shape, tile.dtype, len(tile.path))
        core.sched.place_load(tile.tid, key, tile.regions)
    if load and core.sched.policy.split_reused and d.t.writes:
        # a reload alternates with a second buffer, which must fit (memory.Memory)
        wait = core.memory.second_buffer(d.t.tid)
        if wait and d.t.regions.r_prev is not None:
            np.maximum(d.t.regions.r_prev, wait, out=d.t.regions.r_prev)
    if core.index in core.dead:
        core.sched.dead("dma", core.sched.dma_time(parts, nbytes, runs, hbm_bytes), kind)
    else:
        core.sched.dma(parts, p0, nbytes, runs, hbm_bytes, [box(s)], [box(d)], kind, load)
    core.cost_s += time.perf_counter() - t


def _runs(ap: AP) -> int:
    """Contiguous runs (DMA descriptors) of an access."""
    elems = math.prod(ap.shape)
    run, expect = 1, 1
    for n, s in reversed(ap.dims):
        if n == 1:
            continue
        if s != expect:
            break
        run *= n
        expect *= n
    if ap.t.buffer != "hbm":
        run = min(run, free(ap) or 1)
    return max(1, elems // run)


def tensor_tensor_k(op: str, a: AP, b: AP, d: AP) -> float:
    """VectorE cycles per element of a tensor_tensor (nisa docs): N when one input is in PSUM
    (only one operand streams from SBUF), or when every operand is bf16 and the op is an add,
    multiply or subtract over contiguous elements; 2N otherwise."""
    if a.t.buffer == "psum" or b.t.buffer == "psum":
        return 1.0
    if op in ("add", "multiply", "subtract") and all(
        ap.t.dtype == "bfloat16" and ap.dims[-1][1] == 1 for ap in (a, b, d)
    ):
        return 1.0
    return DVE_K["tensor_tensor"]
