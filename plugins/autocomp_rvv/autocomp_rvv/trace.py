"""Reading a Spike execution log (``-l --log-commits``) into the instructions of the kernel region.

Spike writes two lines per instruction: the disassembly, then the commit record with register
and memory writes. Vector instructions carry ``e<SEW> m<LMUL> l<vl>`` in the commit record and
one ``mem 0x...`` entry per element accessed; a store's entry also holds the value written
(``mem 0xADDR 0xVALUE``, two hex digits per byte). The region of interest lies between the two
``csrr ..., minstret`` reads of the harness.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_DISASM = re.compile(r"^core\s+\d+: 0x([0-9a-f]+) \(0x[0-9a-f]+\) (\S+)\s*(.*)$")
_COMMIT = re.compile(r"^core\s+\d+: \d 0x[0-9a-f]+ \(0x[0-9a-f]+\)(.*)$")
_VTYPE = re.compile(r" e(\d+) m(f?)(\d+) l(\d+)")
_MEM = re.compile(r"mem 0x([0-9a-f]+)")
_STORE = re.compile(r"mem 0x([0-9a-f]+) 0x([0-9a-f]+)")
_EXCEPTION = re.compile(r"^core\s+\d+: exception (\S+), epc 0x([0-9a-f]+)")


class TraceError(RuntimeError):
    """The log does not hold a well-formed kernel region."""


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


def parse_region(log: str | Path) -> list[Insn]:
    """The instructions strictly between the two minstret reads of the harness."""
    text = Path(log).read_text(errors="replace") if isinstance(log, Path) else log
    first = text.find("minstret")  # skip the harness set-up quickly
    if first > 0:
        text = text[text.rfind("\n", 0, first) + 1 :]
    insns: list[Insn] = []
    inside = False
    reads = 0
    current: Insn | None = None
    for line in text.splitlines():
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
                current = Insn(int(m.group(1), 16), mnemonic, operands)
                insns.append(current)
            continue
        if inside and current is not None:
            c = _COMMIT.match(line)
            if c:
                rest = c.group(1)
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
