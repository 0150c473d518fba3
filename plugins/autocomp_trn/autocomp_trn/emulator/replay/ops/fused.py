"""The current API's fused element-wise instructions: scalar_tensor_tensor and
tensor_scalar_reduce (VectorE), and the NeuronCore-v4 exponential (VectorE) and activate2
(ScalarE). Each checks its rules, computes in fp32 and schedules its cost. tensor_scalar_reduce
and exponential reduce through VectorE's accumulator registers as their reduce_cmd says."""

from __future__ import annotations

import math
import weakref

import numpy as np

from ... import hardware as hw
from .. import pricing
from ..numerics import ACT, ALU, REDUCE
from ..rules import elementwise_checks, onchip, shape_eq
from ..state import AP, Core, fail, free
from .elementwise import _scalar_operand
from .generations import BYPASS, alu, require


def _apply(f, x, v, reverse: bool):
    with np.errstate(all="ignore"):
        return f(v, x) if reverse else f(x, v)


def _reduce_target(core: Core, dsts: list, data: AP, what: str) -> AP | None:
    """The [P, 1] tile a fused reduction writes (the second destination), or None."""
    if len(dsts) == 1:
        return None
    if len(dsts) != 2:
        raise ValueError("dst count")
    red = dsts[1]
    onchip(red, f"{what} reduce_res", core.line)
    if red.dims[0][0] != data.dims[0][0] or math.prod(red.shape[1:]) != 1:
        fail(
            f"{what} reduce_res must be a [P, 1] tile with the data's partitions",
            "err_num_partition_mismatch",
            core.line,
        )
    return red


def _reduce(core: Core, red: AP | None, y: np.ndarray, op: str, negate: bool = False) -> None:
    """Write ``op`` of ``y`` over its free axes into ``red``."""
    if red is None or not core.numeric:
        return
    with np.errstate(all="ignore"):
        r = REDUCE[op](y.reshape(core.seeds, y.shape[1], -1), axis=2)
    red.write((-r if negate else r).reshape((core.seeds, *red.shape)))


#: VectorE's accumulator registers, one per partition (per seed), shared by tensor_scalar_reduce
#: and exponential; per replayed core, NaN until an instruction resets or loads them (so reading
#: them first computes NaN, as from unwritten memory)
_DVE_REGISTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: what reduce_cmd=reset puts in the registers, by reduction
IDENTITY = {"add": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}
COMMANDS = ("idle", "reset", "reduce", "reset_reduce", "load_reduce")


def _init_operand(core: Core, attrs: dict, srcs, k: int, data: AP):
    """The start value of reduce_cmd=load_reduce (a scalar or [P, 1] tile), and the next source."""
    if attrs.get("reduce_cmd") != "load_reduce":
        return None, k
    v, k = _scalar_operand(core, attrs, "reduce_init", srcs, k, data)
    if not core.numeric:
        return None, k
    parts = (core.seeds, data.dims[0][0])
    return (np.full(parts, v, np.float32) if np.ndim(v) == 0 else v.reshape(parts)), k


def _accumulate(core: Core, data: AP, y, cmd: str, op: str, init) -> np.ndarray:
    """Apply ``cmd`` to the accumulator registers of ``data``'s partitions with ``op`` of ``y``
    over its free axes; returns those registers afterwards ([seeds, P])."""
    regs = _DVE_REGISTERS.get(core)
    if regs is None:
        regs = _DVE_REGISTERS[core] = np.full((core.seeds, hw.PMAX), np.nan, np.float32)
    t = data.t
    p0 = (data.offset % (t.parts * t.free)) // t.free if t.buffer != "hbm" else 0
    lanes = slice(p0, p0 + data.dims[0][0])
    if cmd == "reset":
        regs[:, lanes] = IDENTITY[op]
    elif cmd == "load_reduce":
        regs[:, lanes] = init
    if cmd in ("reduce", "reset_reduce", "load_reduce"):
        with np.errstate(all="ignore"):
            r = REDUCE[op](y.reshape(core.seeds, y.shape[1], -1), axis=2)
            regs[:, lanes] = r if cmd == "reset_reduce" else ALU[op](regs[:, lanes], r)
    return regs[:, lanes]


def _write_registers(red: AP | None, regs: np.ndarray, negate: bool = False) -> None:
    if red is not None:
        red.write((-regs if negate else regs).reshape((regs.shape[0], *red.shape)))


def scalar_tensor_tensor(core: Core, dsts, srcs, attrs) -> None:
    (d,), data = dsts, srcs[0]
    f0, f1 = alu(core, attrs["op0"]), alu(core, attrs["op1"])
    elementwise_checks("dve", dsts, srcs[:1], "scalar_tensor_tensor", core.line)
    shape_eq(data, d, "scalar_tensor_tensor output", core.line)
    v0, k = _scalar_operand(core, attrs, "operand0", srcs, 1, data)
    if k != len(srcs) - 1:
        raise ValueError("operand count")
    other = srcs[k]
    onchip(other, "scalar_tensor_tensor operand1", core.line)
    shape_eq(other, data, "scalar_tensor_tensor operand1", core.line)
    if data.t.buffer == "psum" and other.t.buffer == "psum":
        fail(
            "scalar_tensor_tensor cannot read both data and operand1 from PSUM",
            "err_unsupported_memory",
            core.line,
        )
    if core.numeric:
        x = _apply(f0, data.read(), v0, bool(attrs.get("reverse0")))
        d.write(_apply(f1, x, other.read(), bool(attrs.get("reverse1"))))
    k_rate = pricing.tensor_tensor_k(attrs["op1"], data, other, d)  # about a tensor_tensor's
    pricing.compute(core, "dve", "scalar_tensor_tensor", free(d), dsts, srcs, k=k_rate)


def tensor_scalar_reduce(core: Core, dsts, srcs, attrs) -> None:
    d, data = dsts[0], srcs[0]
    f0 = alu(core, attrs["op0"])
    op, cmd = attrs["reduce_op"], attrs.get("reduce_cmd", "reset_reduce")
    if op not in IDENTITY or cmd not in COMMANDS:
        raise ValueError("reduce_op")
    elementwise_checks("dve", dsts[:1], srcs[:1], "tensor_scalar_reduce", core.line)
    shape_eq(data, d, "tensor_scalar_reduce output", core.line)
    v0, k = _scalar_operand(core, attrs, "operand0", srcs, 1, data)
    init, k = _init_operand(core, attrs, srcs, k, data)
    if k != len(srcs):
        raise ValueError("operand count")
    red = _reduce_target(core, dsts, data, "tensor_scalar_reduce")
    if core.numeric:
        y = _apply(f0, data.read(), v0, bool(attrs.get("reverse0")))
        d.write(y)
        regs = _accumulate(core, data, y, cmd, op, init)
        _write_registers(red, regs, bool(attrs.get("negate")))
    pricing.compute(  # nisa docs: max(MIN_II, N) + MIN_II
        core, "dve", "tensor_scalar_reduce", free(d), dsts, srcs, extra_cycles=core.gen.min_ii
    )


def exponential(core: Core, dsts, srcs, attrs) -> None:
    require(core, "exponential", "nki.isa.exponential")
    d, data = dsts[0], srcs[0]
    cmd = attrs.get("reduce_cmd", "reset_reduce" if len(dsts) == 2 else "idle")
    if cmd not in COMMANDS:
        raise ValueError("reduce_cmd")
    elementwise_checks("dve", dsts[:1], srcs[:1], "exponential", core.line)
    shape_eq(data, d, "exponential output", core.line)
    m, k = _scalar_operand(core, attrs, "max_value", srcs, 1, data)
    init, k = _init_operand(core, attrs, srcs, k, data)
    if k != len(srcs):
        raise ValueError("operand count")
    red = _reduce_target(core, dsts, data, "exponential")
    if core.numeric:
        with np.errstate(all="ignore"):
            y = np.exp(data.read() - m).astype(np.float32)
        d.write(y)
        _write_registers(red, _accumulate(core, data, y, cmd, "add", init))
    # hw engineer's figure (Trn3 arch guide): 4x the throughput of a ScalarE exp; the
    # reduction rides along in the same pass
    pricing.compute(core, "dve", "exponential", free(d), dsts, srcs, k=0.25)


#: the (op0, op1) pairs activate2's tensor-scalar stage supports
ACTIVATE2_PAIRS = {
    ("multiply", "add"),
    ("multiply", "subtract"),
    ("multiply", BYPASS),
    ("add", BYPASS),
    ("subtract", BYPASS),
    (BYPASS, BYPASS),
}


def activate2(core: Core, dsts, srcs, attrs) -> None:
    require(core, "activate2", "nki.isa.activate2")
    d, data = dsts[0], srcs[0]
    func, op0, op1 = attrs["func"], attrs["op0"], attrs["op1"]
    if func not in ACT:
        raise ValueError("func")
    if (op0, op1) not in ACTIVATE2_PAIRS:
        fail(
            f"activate2 does not support (op0, op1) = ({op0}, {op1}): it takes (multiply, add), "
            "(multiply, subtract), (multiply, bypass), (add, bypass), (subtract, bypass) or "
            "(bypass, bypass)",
            "err_unsupported_activate2_ops",
            core.line,
        )
    elementwise_checks("act", dsts[:1], srcs[:1], f"activate2 {func}", core.line)
    shape_eq(data, d, "activate2 output", core.line)
    v0, k = _scalar_operand(core, attrs, "imm0", srcs, 1, data)
    v1, k = _scalar_operand(core, attrs, "imm1", srcs, k, data)
    if k != len(srcs):
        raise ValueError("operand count")
    red = _reduce_target(core, dsts, data, "activate2")
    op = attrs.get("reduce_op", "add")
    if red is not None and op not in ("add", "maximum", "minimum"):
        fail(
            f"activate2 reduces with add, max or min, not {op}",
            "err_unsupported_reduce_op",
            core.line,
        )
    if core.numeric:
        x = data.read()
        for name, v, rev in ((op0, v0, "reverse0"), (op1, v1, "reverse1")):
            if name != BYPASS:
                x = _apply(alu(core, name), x, v, bool(attrs.get(rev)))
        with np.errstate(all="ignore"):
            y = ACT[func](x).astype(np.float32)
        d.write(y)
        _reduce(core, red, y, op)
    pricing.compute(
        core, "act", "activate2", free(d), dsts, srcs, extra_cycles=64 if red is not None else 0
    )
