"""A documented cycle model over the instructions Spike executed in the kernel region.

Spike counts instructions exactly but has no timing. This module turns the executed
instruction stream (with each vector instruction's SEW, LMUL, vl and the addresses it
touched) into *modelled* cycles. It is a model, not a measurement:

* Scalar instructions cost 1 cycle (multiply/divide/FP-divide cost more, per core).
* A vector instruction goes to one of three pipes (load, store, arithmetic). It occupies its
  pipe for ``ceil(vl * width / dlen)`` cycles, where width is the widest element it handles
  (2*SEW for widening/narrowing ops). Divide/sqrt run at ``div_cycles_per_elem``. Unit-stride
  memory moves ``mem_bits`` per cycle; strided and indexed accesses (and segment accesses on
  cores without full-bandwidth segment support) move ``elems_per_cycle_*`` elements per
  cycle; every distinct cache line touched costs at least one cycle.
* An instruction starts when its pipe is free, when the scalar core has issued it, and when
  its source registers are ready; a result is ready ``lat_<class>`` cycles after its
  producer starts (chaining), so a dependent chain on short vectors pays the latency while
  independent accumulators overlap.
* Decoupled cores (Saturn-like) let the scalar core run ahead through a queue of
  ``queue_depth`` vector instructions; coupled cores (K230-like) wait for each vector
  instruction to pass through its pipe. Vector-to-scalar moves make the scalar core wait.
* The region's cycles are when the last instruction, scalar or vector, completes.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter, deque
from dataclasses import dataclass, field, fields
from importlib import resources

from .trace import Insn


@dataclass(frozen=True)
class CoreParams:
    name: str
    description: str
    vlen: int
    dlen: int
    decoupled: bool
    queue_depth: int
    vec_issue: int
    vset: int
    mem_bits: int
    elems_per_cycle_strided: float
    elems_per_cycle_indexed: float
    segment_full_bw: bool
    line_bytes: int
    lat_alu: int
    lat_mul: int
    lat_fma: int
    lat_load: int
    lat_permute: int
    lat_reduce: int
    div_cycles_per_elem: int
    to_scalar: int
    scalar_mul: int
    scalar_div: int
    scalar_fdiv: int

    def with_lengths(self, vlen: int, dlen: int) -> CoreParams:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(vlen=vlen, dlen=dlen)
        return CoreParams(**values)


def _load_presets() -> dict[str, CoreParams]:
    data = tomllib.loads(resources.files("autocomp_rvv").joinpath("data/cores.toml").read_text())
    return {name: CoreParams(name=name, **values) for name, values in data.items()}


CORE_PRESETS: dict[str, CoreParams] = _load_presets()

# --------------------------------------------------------------------------- classification
_LOAD = re.compile(
    r"^vl(?:(?P<s>s)?(?:seg(?P<nf>\d))?e(?P<eew>\d+)(?:ff)?|(?P<x>[uo]x)(?:seg(?P<nfx>\d))?ei\d+"
    r"|(?P<whole>\d)re(?P<weew>\d+)|(?P<mask>m))\.v$"
)
_STORE = re.compile(
    r"^vs(?:(?P<s>s)?(?:seg(?P<nf>\d))?e(?P<eew>\d+)|(?P<x>[uo]x)(?:seg(?P<nfx>\d))?ei\d+"
    r"|(?P<whole>\d)r|(?P<mask>m))\.v$"
)
_FMA = {
    "vfmacc",
    "vfnmacc",
    "vfmsac",
    "vfnmsac",
    "vfmadd",
    "vfnmadd",
    "vfmsub",
    "vfnmsub",
    "vfwmacc",
    "vfwnmacc",
    "vfwmsac",
    "vfwnmsac",
    "vmacc",
    "vnmsac",
    "vmadd",
    "vnmsub",
    "vwmacc",
    "vwmaccu",
    "vwmaccsu",
    "vwmaccus",
}
_MUL = {
    "vfmul",
    "vfwmul",
    "vmul",
    "vmulh",
    "vmulhu",
    "vmulhsu",
    "vwmul",
    "vwmulu",
    "vwmulsu",
    "vsmul",
}
_DIV = {"vfdiv", "vfrdiv", "vfsqrt", "vdiv", "vdivu", "vrem", "vremu"}
_PERMUTE = {
    "vslideup",
    "vslidedown",
    "vslide1up",
    "vslide1down",
    "vfslide1up",
    "vfslide1down",
    "vrgather",
    "vrgatherei16",
    "vcompress",
}
_TO_SCALAR = {"vmv.x.s", "vfmv.f.s", "vcpop.m", "vfirst.m"}
_VSET = {"vsetvli", "vsetivli", "vsetvl"}
_SCALAR_MUL = {"mul", "mulh", "mulhu", "mulhsu", "mulw"}
_SCALAR_DIV = {"div", "divu", "rem", "remu", "divw", "divuw", "remw", "remuw"}
_SCALAR_FDIV = {"fdiv.s", "fdiv.d", "fsqrt.s", "fsqrt.d"}
_NARROWING = ("vnsrl", "vnsra", "vnclip", "vncvt", "vfncvt")
_VREG = re.compile(r"\bv(\d+)\b")


@dataclass
class ModelReport:
    core: str
    vlen: int
    dlen: int
    cycles: int
    instructions: int
    vector_instructions: int
    scalar_cycles: (
        int  # cycles the scalar core spent (issue + scalar work + waiting for the vector unit)
    )
    pipe_busy: dict[str, int]
    lmul_use: Counter = field(default_factory=Counter)
    top: list[tuple[str, int]] = field(default_factory=list)  # mnemonics by pipe cycles

    def summary(self) -> str:
        """Feedback for the next prompt."""
        busy = ", ".join(
            f"{p} pipe busy {100 * c / max(self.cycles, 1):.0f}%" for p, c in self.pipe_busy.items()
        )
        lmul = ", ".join(f"{_lmul_name(k)}: {v}" for k, v in sorted(self.lmul_use.items()))
        top = ", ".join(f"{m} {c}" for m, c in self.top)
        lines = [
            (
                f"Modelled {self.cycles} cycles on a {self.core}-like core (VLEN {self.vlen}, DLEN {self.dlen}); "
                f"{self.instructions} instructions executed, {self.vector_instructions} of them vector."
            ),
            (
                f"Vector unit: {busy}."
                if self.vector_instructions
                else "No vector instructions executed: the kernel runs entirely on the scalar core."
            ),
        ]
        if lmul:
            lines.append(f"Vector instructions by LMUL: {lmul}.")
        if top:
            lines.append(f"Most pipe cycles: {top}.")
        return "\n".join(lines)


def _lmul_name(lmul: float) -> str:
    return f"mf{round(1 / lmul)}" if lmul < 1 else f"m{int(lmul)}"


def _group(lmul: float) -> int:
    return max(1, int(lmul))


class _Machine:
    """The running state of the model: clocks, pipes and register readiness."""

    def __init__(self, p: CoreParams) -> None:
        self.p = p
        self.t = 0  # scalar core clock
        self.pipe_free = {"load": 0, "store": 0, "arith": 0}
        self.pipe_busy = {"load": 0, "store": 0, "arith": 0}
        self.vready = [0] * 32
        self.queue: deque[int] = deque()  # start times of issued, not yet started vector insns
        self.end = 0
        self.by_mnemonic: Counter = Counter()

    def scalar(self, insn: Insn) -> None:
        m, p = insn.mnemonic, self.p
        if m in _VSET:
            self.t += p.vset
        elif m in _SCALAR_DIV:
            self.t += p.scalar_div
        elif m in _SCALAR_FDIV:
            self.t += p.scalar_fdiv
        elif m in _SCALAR_MUL:
            self.t += p.scalar_mul
        else:
            self.t += 1

    def vector(self, insn: Insn) -> None:
        p = self.p
        pipe, occupancy, latency, widen = self._cost(insn)
        regs = [int(r) for r in _VREG.findall(insn.operands)]
        group = _group(insn.lmul)
        dst, srcs = (regs[0], regs[1:]) if regs and pipe != "store" else (None, regs)
        root = insn.mnemonic.split(".")[0]
        if dst is not None and (root in _FMA or root.startswith("vslideup")):
            srcs = [*srcs, dst]  # the destination is also read: multiply-add accumulator, slide-up
        if "v0.t" in insn.operands:
            srcs = [*srcs, 0]
        ready = 0
        for r in srcs:
            for k in range(group * (2 if widen else 1)):
                if r + k < 32:
                    ready = max(ready, self.vready[r + k])
        # issue from the scalar core, through the queue when decoupled
        self.t += p.vec_issue
        if p.decoupled:
            while self.queue and self.queue[0] <= self.t:
                self.queue.popleft()
            if len(self.queue) >= p.queue_depth:
                self.t = max(self.t, self.queue.popleft())
        start = max(self.t, self.pipe_free[pipe], ready)
        self.pipe_free[pipe] = start + occupancy
        self.pipe_busy[pipe] += occupancy
        self.by_mnemonic[insn.mnemonic] += occupancy
        done = start + occupancy + latency - 1
        self.end = max(self.end, done)
        if dst is not None:
            for k in range(group * (2 if widen else 1)):
                if dst + k < 32:
                    self.vready[dst + k] = start + latency
        if insn.mnemonic in _TO_SCALAR:
            self.t = max(self.t, done + p.to_scalar)  # the scalar core waits for the value
        elif p.decoupled:
            self.queue.append(start)
        else:
            self.t = max(self.t, start + occupancy)

    def _cost(self, insn: Insn) -> tuple[str, int, int, bool]:
        """(pipe, occupancy cycles, latency, widens) of one vector instruction."""
        p, m = self.p, insn.mnemonic
        vl, sew = max(insn.vl, 0), max(insn.sew, 8)
        for regex, pipe in ((_LOAD, "load"), (_STORE, "store")):
            mm = regex.match(m)
            if mm:
                return pipe, self._mem_cycles(insn, mm), p.lat_load if pipe == "load" else 1, False
        root = m.split(".")[0]
        # widening (vw*, vfw*) and narrowing (vnsrl, vnsra, vnclip[u], vncvt, vfncvt) ops
        # handle 2*SEW-wide elements; vnmsac/vfnmacc & co. are plain-width multiply-adds
        widen = (root.startswith(("vw", "vfw")) or root.startswith(_NARROWING)) and root not in (
            "vwredsum",
            "vwredsumu",
        )
        width = 2 * sew if widen else sew
        groups = max(1, math.ceil(vl * width / p.dlen))
        if root in _DIV:
            return (
                "arith",
                max(groups, vl * p.div_cycles_per_elem // max(1, p.dlen // width)),
                p.lat_fma,
                widen,
            )
        if root in _FMA:
            return "arith", groups, p.lat_fma, widen
        if root in _MUL:
            return "arith", groups, p.lat_mul, widen
        if "red" in root:
            steps = int(math.log2(max(2, p.dlen // sew)))
            return "arith", groups + steps, p.lat_reduce, widen
        if root in _PERMUTE:
            if root.startswith(("vrgather", "vcompress")):
                return "arith", max(groups, vl), p.lat_permute, widen
            return "arith", groups, p.lat_permute, widen
        return "arith", groups, p.lat_alu, widen

    def _mem_cycles(self, insn: Insn, mm: re.Match) -> int:
        p = self.p
        elems = len(insn.mem_addrs)  # Spike logs one entry per element accessed
        if mm.group("mask"):
            width = 8  # vlm.v / vsm.v move ceil(vl / 8) bytes, logged byte by byte
        elif mm.group("whole"):
            # vl<nr>re<eew>.v: elements of EEW; vs<nr>r.v stores bytes (Spike logs each byte)
            width = int(mm.groupdict().get("weew") or 8)
        elif mm.group("x"):
            width = insn.sew
        else:
            width = int(mm.group("eew"))
        lines = len({a // p.line_bytes for a in insn.mem_addrs})
        bandwidth = math.ceil(elems * width / p.mem_bits)
        nf = int(mm.group("nf") or mm.group("nfx") or 1)
        if mm.group("x"):
            rate = elems / p.elems_per_cycle_indexed
        elif mm.group("s") or (nf > 1 and not p.segment_full_bw):
            rate = elems / p.elems_per_cycle_strided
        else:
            rate = bandwidth + (nf - 1 if nf > 1 else 0)
        return max(1, lines, math.ceil(rate), bandwidth)


def model_cycles(insns: list[Insn], params: CoreParams) -> ModelReport:
    """Run the model over the executed instructions of the kernel region."""
    machine = _Machine(params)
    lmul_use: Counter = Counter()
    nvec = 0
    for insn in insns:
        if insn.is_vector and insn.mnemonic not in _VSET:
            nvec += 1
            lmul_use[insn.lmul] += 1
            machine.vector(insn)
        else:
            machine.scalar(insn)
    cycles = max(machine.t, machine.end)
    return ModelReport(
        core=params.name,
        vlen=params.vlen,
        dlen=params.dlen,
        cycles=int(cycles),
        instructions=len(insns),
        vector_instructions=nvec,
        scalar_cycles=int(machine.t),
        pipe_busy=dict(machine.pipe_busy),
        lmul_use=lmul_use,
        top=machine.by_mnemonic.most_common(5),
    )
