"""Reading a Spike execution log (``-l --log-commits``) into the instructions of the kernel region.

Spike writes two lines per instruction: the disassembly, then the commit record with register
and memory writes. Vector instructions carry ``e<SEW> m<LMUL> l<vl>`` in the commit record and
one ``mem 0x...`` entry per element accessed; a store's entry also holds the value written
(``mem 0xADDR 0xVALUE``, two hex digits per byte). The region of interest lies between the two
``csrr ..., minstret`` reads of the harness.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: The most instructions, and memory accesses (one per element a vector access touches), the
#: timed call may execute: the parsed region is held in the evaluator's memory, so a kernel
#: past either is refused before it costs more (honest kernels stay far below: about 10^5).
MAX_REGION_INSTRUCTIONS = 1_000_000
MAX_REGION_ACCESSES = 1_000_000

_DISASM = re.compile(r"^core\s+\d+: 0x([0-9a-f]+) \(0x[0-9a-f]+\) (\S+)\s*(.*)$")
_COMMIT = re.compile(r"^core\s+\d+: \d 0x[0-9a-f]+ \(0x[0-9a-f]+\)(.*)$")
_VTYPE = re.compile(r" e(\d+) m(f?)(\d+) l(\d+)")
_MEM = re.compile(r"mem 0x([0-9a-f]+)")
_STORE = re.compile(r"mem 0x([0-9a-f]+) 0x([0-9a-f]+)")
_EXCEPTION = re.compile(r"^core\s+\d+: exception (\S+), epc 0x([0-9a-f]+)")


class TraceError(RuntimeError):
    """The log does not hold a well-formed kernel region."""


class RegionTooLarge(TraceError):
    """The timed call executed more than the evaluator holds (the candidate's failure)."""


@dataclass(slots=True)
class Insn:
    pc: int
    mnemonic: str
    operands: str
    sew: int = 0  # vector only: SEW, LMUL and vl in force when it executed
    lmul: float = 0.0
    vl: int = 0
    mem_addrs: list[int] = field(default_factory=list)
    stores: tuple[tuple[int, bytes], ...] = ()  # (address, bytes written), in order

    @property
    def is_vector(self) -> bool:
        return self.mnemonic.startswith("v")


def parse_region(log: str | Path | Iterable[str]) -> list[Insn]:
    """The instructions strictly between the two minstret reads of the harness. ``log`` is the
    log's text, its path, or its lines (read one at a time: memory stays bounded by the caps
    whatever the log's size)."""
    if isinstance(log, Path):
        with log.open(errors="replace") as f:
            return parse_region(f)
    lines: Iterable[str] = log.splitlines() if isinstance(log, str) else log
    insns: list[Insn] = []
    inside = False
    reads = 0
    accesses = 0
    current: Insn | None = None
    seen_minstret = False  # the harness's set-up before the first minstret read is skipped
    for line in lines:
        if not seen_minstret:
            if "minstret" not in line:
                continue
            seen_minstret = True
        line = line.rstrip("\n")
        if line.startswith("core") and ": exception" in line:
            if inside and "trap_user_ecall" in line and insns and insns[-1].mnemonic == "ecall":
                insns.pop()  # crt.S: the user-mode call's way back; it does not retire
                continue
            m = _EXCEPTION.match(line)
            cause = m.group(1) if m else line
            where = f" at pc 0x{m.group(2)}" if m else ""
            raise TraceError(f"the kernel raised {cause}{where} on Spike")
        m = _DISASM.match(line)
        if m:
            mnemonic, operands = m.group(2), m.group(3)
            if mnemonic == "csrr" and operands.endswith("minstret"):
                reads += 1
                if reads == 1:
                    inside = True
                    continue
                if reads == 2:
                    break
            if inside:
                if len(insns) == MAX_REGION_INSTRUCTIONS:
                    raise RegionTooLarge(
                        f"the timed call executed more than {MAX_REGION_INSTRUCTIONS} instructions"
                    )
                current = Insn(int(m.group(1), 16), mnemonic, operands)
                insns.append(current)
            continue
        if inside and current is not None:
            c = _COMMIT.match(line)
            if c:
                rest = c.group(1)
                accesses += rest.count("mem ")
                if accesses > MAX_REGION_ACCESSES:
                    raise RegionTooLarge(
                        f"the timed call made more than {MAX_REGION_ACCESSES} memory accesses "
                        "(elements loaded or stored)"
                    )
                if "mem " in rest and (written := _STORE.findall(rest)):
                    current.stores = tuple(
                        (int(a, 16), int(v, 16).to_bytes(len(v) // 2, "little")) for a, v in written
                    )
                if current.is_vector:
                    v = _VTYPE.match(rest)
                    if v:
                        current.sew = int(v.group(1))
                        lm = int(v.group(3))
                        current.lmul = 1.0 / lm if v.group(2) else float(lm)
                        current.vl = int(v.group(4))
                    if "mem " in rest:
                        current.mem_addrs = [int(a, 16) for a in _MEM.findall(rest)]
                current = None
    if reads < 2:
        raise TraceError(
            "the Spike log does not contain the kernel region (the program did not finish?)"
        )
    return insns


def reported_instret(stdout: str) -> int | None:
    """The ``INSTRET n`` line printed by the bare-metal harness."""
    m = re.search(r"INSTRET (\d+)", stdout)
    return int(m.group(1)) if m else None
