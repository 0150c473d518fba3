"""The timed run is the checked run.

Spike runs the kernel once at the benchmark shape, on inputs drawn from a seed that is fresh
for every evaluation, and its commit log records every store the kernel made. From that log
alone (nothing the program prints after the kernel ran is believed) this module rebuilds the
outputs of the timed call, and refuses any store outside them and the kernel's own stack.
A trusted verifier (the harness linked with the problem's baseline: the candidate is not in
its process) then checks those outputs against the reference, element by element, together
with the outputs of the correctness runs (checks.py).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from autocomp_core import FailureKind, private_workdir
from autocomp_core.sandbox import SandboxLimits, run_sandboxed

from .runner import RunFailure, kind_of, qemu_argv
from .trace import Insn

#: Room the bare-metal harness leaves before and after every buffer (rvv_harness.h: H_GUARD).
GUARD_BYTES = 64
IMAGE_FILE = "timed_outputs.bin"

_LINE = re.compile(
    r"^(BUF|OUT) (\S+) 0x([0-9a-f]+) (\d+)$|^STACK 0x([0-9a-f]+) 0x([0-9a-f]+)$", re.MULTILINE
)


@dataclass(frozen=True)
class Region:
    name: str
    start: int
    size: int

    @property
    def end(self) -> int:
        return self.start + self.size


@dataclass(frozen=True)
class Layout:
    """Where the bare-metal harness put things, printed before the kernel first ran."""

    buffers: tuple[Region, ...]
    outputs: tuple[Region, ...]  # in the harness's registration order
    stack: Region  # where the timed call's frames may lie: below the measuring frame


def parse_layout(stdout: str) -> Layout:
    buffers, outputs, stack = [], [], None
    for m in _LINE.finditer(stdout):
        if m.group(5):
            low, top = int(m.group(5), 16), int(m.group(6), 16)
            stack = Region("stack", low, top - low)
        else:
            region = Region(m.group(2), int(m.group(3), 16), int(m.group(4)))
            (buffers if m.group(1) == "BUF" else outputs).append(region)
    if stack is None or not outputs:
        raise RunFailure(
            FailureKind.INFRA_ERROR,
            "the bare-metal harness did not print its buffer layout",
            stdout,
        )
    return Layout(tuple(buffers), tuple(outputs), stack)


def outputs_image(insns: list[Insn], layout: Layout) -> bytes:
    """Per output: the bytes the timed call left there, then one byte each saying whether it was
    written (the verifier's ``verify`` input). Raises RunFailure for a store anywhere else."""
    images = [bytearray(o.size) for o in layout.outputs]
    masks = [bytearray(o.size) for o in layout.outputs]
    stack = layout.stack
    for insn in insns:
        for addr, data in insn.stores:
            end = addr + len(data)
            if stack.start <= addr and end <= stack.end:
                continue
            for out, image, mask in zip(layout.outputs, images, masks):
                if out.start <= addr and end <= out.end:
                    at = addr - out.start
                    image[at : at + len(data)] = data
                    mask[at : at + len(data)] = b"\1" * len(data)
                    break
            else:
                raise stray_store(insn, addr, layout)
    return b"".join(bytes(image) + bytes(mask) for image, mask in zip(images, masks))


def stray_store(insn: Insn, addr: int, layout: Layout) -> RunFailure:
    """Why a store outside the outputs and the stack is refused, naming the buffer it hit."""
    where = f"the timed run on Spike (pc {insn.pc:#x}, {insn.mnemonic})"
    outputs = {o.name for o in layout.outputs}
    for buf in (*layout.outputs, *layout.buffers):
        if buf.start - GUARD_BYTES <= addr < buf.end + GUARD_BYTES:
            if buf.name not in outputs:
                return RunFailure(
                    FailureKind.CRASH, f"{where}: write into the read-only input `{buf.name}`"
                )
            side = "past the end of" if addr >= buf.start else "before the start of"
            return RunFailure(
                FailureKind.CRASH,
                f"{where}: out-of-bounds write {side} `{buf.name}` "
                f"(byte offset {addr - buf.start} of {buf.size})",
            )
    return RunFailure(
        FailureKind.REJECTED,
        f"{where}: the kernel stored to address {addr:#x}, outside its "
        "outputs and its own stack (a static or global variable, or memory "
        "it does not own); a kernel may only write its outputs",
    )


async def verify_outputs(
    qemu: str,
    verifier: Path,
    runs: list[tuple[str, bytes]],
    check_seed: int,
    image: bytes,
    timed_seed: int,
    timeout_s: float,
) -> None:
    """Judge the runners' outputs (``runs``: a label and the outputs file of each) and the
    timed call's with the trusted verifier; RunFailure if any is wrong. The verifier runs in a
    fresh directory into which everything is copied by value: no candidate process ever
    had access to it."""
    with private_workdir("autocomp-rvv-verify-") as folder:
        folder.chmod(0o777)  # the sandbox may run it as another uid
        (folder / IMAGE_FILE).write_bytes(image)
        argv = [*qemu_argv(qemu, 128), "", "verify", str(check_seed), str(timed_seed), IMAGE_FILE]
        for i, (label, data) in enumerate(runs):
            (folder / f"run{i}.bin").write_bytes(data)
            argv += [label, f"run{i}.bin"]
        local = folder / verifier.name
        shutil.copyfile(verifier, local)
        local.chmod(0o755)
        argv[len(qemu_argv(qemu, 128))] = str(local)
        limits = SandboxLimits(wall_s=timeout_s, memory_mb=None, max_output_bytes=64_000)
        result = await run_sandboxed(argv, cwd=folder, limits=limits)
    for line in result.stdout.splitlines():
        if line.startswith("FAIL "):
            message = line[5:]
            if not message.startswith("VLEN="):
                message = f"the timed run on Spike: {message}"
            raise RunFailure(kind_of(message), message, result.stdout, result.stderr)
        if line.startswith("BADFILE "):
            raise RunFailure(
                FailureKind.REJECTED,
                f"{line[8:]}: the program did not record exactly the cases' outputs "
                "(did the kernel rewrite the harness's variables?)",
                result.stdout,
                result.stderr,
            )
    if not result.ok or "PASS" not in result.stdout:  # our own verifier failed
        raise RunFailure(
            FailureKind.INFRA_ERROR,
            f"the verifier failed: {(result.stdout + result.stderr).strip()[-400:]}",
            result.stdout,
            result.stderr,
        )
