"""Driving the baseline's and the candidate's timing workers in lock-step, and timing every
call on the engine's own clock (the engine's side of ``runtime/lockstep.py``).

Both workers are alive through the timing phase, each in its own sandboxed process (no
candidate can touch the baseline it is compared with). For timed call r the engine orders
each contender in turn (the candidate; the eager baseline and, when on, the compiled one) to
run once on the inputs of seed r, drawn from OS randomness by the engine and told to no one
before; the order of the contenders is shuffled per call, so an order effect cancels out, and
machine load that comes and goes falls on all of them alike.

The clock runs in a thread of the engine, from writing an order to reading its answer: on
the CPU device the CPU time the kernel charged the worker's whole sandbox over that window
(``proc_clock``: every thread and child process counted, no wait for a busy core), on a GPU
the wall clock. The worker's own timer, which a candidate in that process can rewrite,
measures nothing the verdict uses.

On the CPU device a timed call is four windows (``runtime/lockstep.py``, ``_moved_call``): the
order, a ping, the call (the engine writes the inputs the baseline's worker drew into the
worker's input buffers and says ``go``; the worker calls and says ``done``), and the output
described and read out of the worker's memory (``worker_memory``); each window of a worker
starts where its last one stopped. On a GPU it is four windows too: drawing the inputs, the
cache flush, the call, copying and hashing the output. Either way each of the harness's steps
around the call is compared with the baseline worker's same step and its excess added to that
call's time (``skipped_steps``, ``charged_ms``), and the call's window holds the call and the
socket's glue, the same in both workers, measured in the baseline's, where no candidate runs
(the least glue, or ``candidate_ms``): what the harness does inside the candidate's process,
the candidate can change, so none of it is ever subtracted from the candidate's time on the
candidate's worker's word.

A worker that ends (a crash, its own watchdog), answers out of turn, or overruns the deadline
stops the drive; what the engine does with each worker then is the caller's decision.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import code_samples, kernel_evidence, proc_clock, worker_memory
from .runtime import lockstep as protocol
from .workers import Worker

EngineEnds = protocol.EngineEnds
#: The worker that holds no candidate (and, moved, draws the inputs).
BASELINE = "baseline"

#: How long the driving thread waits on a worker before it looks at the worker's process.
LOOK_S = 0.05
#: A sandbox with more threads than the baseline's is counted again this many times, this far
#: apart, before it is refused: the thread a worker's watchdog ran in may still be listed for
#: a moment after the worker ended it (the baseline's is counted once: a count it shows only
#: for a moment would let an extra thread of the candidate's through, never refuse one).
COUNT_TRIES, COUNT_PAUSE_S = 10, 0.01
_ANSWER = re.compile(r"(\d+) (\w+) ([0-9a-f]{64})")
_INPUTS = re.compile(r"(\d+) (\w+) (inputs|none)")
#: The harness's steps around each call, clocked apart (GPU: the order that draws the inputs,
#: then the ones named here).
STEPS = ("inputs", protocol.FLUSH, protocol.KEEP)
#: (moved) An output may lie spread over this many times its elements' room (a slice of a
#: wider buffer, a transposed view), and a MiB more; beyond, it is not read (the engine would
#: read and keep it all, outside the candidate's sandbox: the sixth red team's a05 made it read
#: 1 GiB for a 256 KiB output).
SPREAD_ELEMENTS = 4
#: (moved, the CPU device) The harness's steps around the call's window: the order read and
#: the last output let go (``arm``); a ``ping`` answered where the worker then waits for
#: ``go``; the output checked and described (``describe``).
MOVED_STEPS = ("arm", "ping", "describe")
#: (moved) At most this many untimed calls of the candidate's after its timed ones, for the
#: kernel's samples of its threads (``_Driver.sample_enough``).
EVIDENCE_CALLS = 2000


@dataclass
class Drive:
    """How a lock-step drive ended: ``complete``, or the name of the worker that ``ended``
    (its process exited), ``overran`` the deadline, answered ``garbled``, left its memory
    ``unreadable`` or returned a ``wrong_output`` (not the problem's shape and dtype), and the
    calls done by then."""

    outcome: str
    worker: str | None = None
    calls_done: int = 0
    detail: str = ""
    #: per contender, the engine's wall clock of each timed call, from order to answer (ms)
    seen_ms: dict[str, list[float]] = field(default_factory=dict)
    #: per contender, the CPU time its worker's sandbox used over the same window (ms); empty
    #: where the kernel's accounting cannot be read
    cpu_ms: dict[str, list[float]] = field(default_factory=dict)
    #: per contender, the digest of each timed call's output, as the worker committed to it
    #: (GPU; on the CPU device the engine keeps the outputs themselves, ``outputs``)
    digests: dict[str, list[str]] = field(default_factory=dict)
    #: per contender and harness step (``STEPS``), the engine's measure of each timed call's
    #: step (ms): its sandbox's CPU time where the kernel's accounting is read, else the wall
    steps_ms: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    #: per worker, the CPU time its sandbox used while ANOTHER worker's call was timed (ms),
    #: and how long those windows were (ms): a worker waiting for its order uses none
    idle_cpu_ms: dict[str, float] = field(default_factory=dict)
    others_ms: dict[str, float] = field(default_factory=dict)
    #: per worker, the files mapped into its process once it was ready (its extensions are
    #: loaded by then), read from outside; None where they could not be read
    mapped: dict[str, set[str] | None] = field(default_factory=dict)
    #: (moved) per contender, each timed call's output as the engine read it, written to a
    #: file of the engine's: {"path", "dtype", "shape", "stride"} (``worker_memory.Output``)
    outputs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: (moved) the least glue a window holds: the baseline's worker's CPU from an order to its
    #: answer where it does nothing else (``ping``), once per timed call (ms)
    ping_ms: list[float] = field(default_factory=list)
    #: (moved) per worker, where its threads ran while its timed calls ran, sampled by the
    #: kernel (``code_samples``; ``Samples.error`` where it could not be sampled)
    samples: dict[str, code_samples.Samples] = field(default_factory=dict)


@dataclass(frozen=True)
class Moved:
    """(The CPU device) The engine moves each call's inputs and output itself: the folder of
    its own where it keeps what it read, and the output every call must have (the problem's
    shape and dtype, ``str(torch.dtype)``): anything else is wrong, and is not read.
    ``in_place``: the problem's own program updates its input (a call may change its inputs).
    ``builds``: the builds the engine placed in the candidate's worker, as (st_dev, st_ino)
    (``kernel_evidence.placed_builds``): its own code."""

    keep: Path
    shape: tuple[int, ...]
    dtype: str
    in_place: bool = False
    builds: frozenset[tuple[int, int]] = frozenset()


class _Stop(Exception):
    def __init__(self, outcome: str, detail: str = "") -> None:
        self.outcome, self.detail = outcome, detail


def _receive(
    ends: protocol.EngineEnds,
    alive: Callable[[], bool],
    deadline: float,
    waiting: Callable[[], None] | None = None,
) -> str:
    """The worker's next line; ``waiting``: called every ``LOOK_S`` until it comes."""
    assert ends.lines is not None
    while True:
        if time.monotonic() > deadline:
            raise _Stop("overran")
        ends.lines.sock.settimeout(LOOK_S)
        try:
            return ends.lines.receive()
        except TimeoutError:
            if not alive():
                raise _Stop("ended") from None
            if waiting is not None:
                waiting()
        except EOFError:
            raise _Stop("ended") from None
        except ValueError as exc:
            raise _Stop("garbled", str(exc)) from None


def _accept(ends: protocol.EngineEnds, alive: Callable[[], bool], deadline: float) -> None:
    while True:
        if time.monotonic() > deadline:
            raise _Stop("overran")
        try:
            return ends.accept(LOOK_S)
        except TimeoutError:
            if not alive():
                raise _Stop("ended") from None


def drive_blocking(
    ends: dict[str, protocol.EngineEnds],
    contenders: dict[str, list[str]],
    alive: dict[str, Callable[[], bool]],
    seeds: list[int],
    deadline: float,
    cpu_clock: bool = False,
    moved: Moved | None = None,
) -> Drive:
    """The drive itself, in the calling thread: ``ends`` per worker name, ``contenders`` each
    worker times (``{"baseline": ["base", "compiled"], "candidate": ["cand"]}``), ``alive``
    per worker (its process still runs), ``deadline`` on ``time.monotonic``; ``cpu_clock``:
    read each worker's sandbox CPU time around every call too (``proc_clock``); ``moved``:
    the engine moves each call's inputs and output itself (the CPU device: the baseline's
    worker, named ``baseline``, draws the inputs; ``runtime/lockstep.py``)."""
    steps = [(name, who) for name, whos in contenders.items() for who in whos]
    result = Drive(
        "complete",
        seen_ms={who: [] for _, who in steps},
        cpu_ms={who: [] for _, who in steps},
        digests={who: [] for _, who in steps},
        steps_ms={who: {step: [] for step in STEPS + MOVED_STEPS} for _, who in steps},
        outputs={who: [] for _, who in steps},
    )
    driver = _Driver(ends, alive, deadline, cpu_clock, result, moved)
    rng = random.SystemRandom()
    try:
        for name in ends:  # connected while setting up, before its candidate was imported
            driver.connect(name)
        for name in ends:  # every worker done with its warm-up before the first timed call
            driver.await_ready(name)
        if moved is not None:
            driver.start_sampling()
        if moved is not None:  # every call's inputs drawn first: between its calls no worker runs
            for r, seed in enumerate(seeds):
                driver.draw(r, seed)
        driver.timing = True
        for r, seed in enumerate(seeds):
            if moved is not None:
                driver.drawn = driver.inputs_of(r)
            rng.shuffle(steps)
            for name, who in steps:
                driver.call(name, r, who, seed)
            result.calls_done = r + 1
        if moved is not None:  # every output read: the workers may go on to their checks
            driver.sample_enough(len(seeds))
            driver.finish_sampling()
            for name in ends:
                ends[name].tell(protocol.SETTLE)
    except _Stop as stop:
        result.outcome, result.worker, result.detail = stop.outcome, driver.current, stop.detail
    except OSError as exc:  # the worker's end went away mid-message
        result.outcome, result.worker, result.detail = "ended", driver.current, str(exc)
    finally:
        driver.close()
    return result


class _Driver:
    """The engine's side of one drive: each step names the worker it waits on (``current``),
    to whom a stop is attributed."""

    def __init__(
        self,
        ends: dict[str, protocol.EngineEnds],
        alive: dict[str, Callable[[], bool]],
        deadline: float,
        cpu_clock: bool,
        result: Drive,
        moved: Moved | None = None,
    ) -> None:
        self.ends, self.alive, self.deadline = ends, alive, deadline
        self.cpu_clock, self.result = cpu_clock, result
        self.moved = moved
        self.ledgers: dict[str, proc_clock.Ledger] = {}
        # per worker: its sandbox's processes and threads at ready
        self.processes: dict[str, tuple[int, int]] = {}
        self.current = ""
        # (moved) each worker's memory, where its input buffers lie, the call's inputs drawn
        self.memory: dict[str, worker_memory.Memory] = {}
        self.layouts: dict[str, dict[str, list[tuple[int, int]]]] = {}
        self.drawn: list[bytes] = []
        # per worker, its sandbox's CPU clock where its last window stopped, once its timed
        # calls have begun (``timing``): its next window starts there
        self.since: dict[str, int] = {}
        self.timing = False
        self.watchdog = worker_memory.Watchdog(deadline) if moved is not None else None
        # (moved) per worker, the kernel's sampling of its threads in its calls' windows
        self.samplers: dict[str, code_samples.Sampler] = {}
        self.sampling = False  # (the timed calls have begun: every worker is sampled)
        self.calling = False  # (a call's window is open: its samples are the ones judged)

    def close(self) -> None:
        for memory in self.memory.values():
            memory.close()
        for sampler in self.samplers.values():
            sampler.close()
        if self.watchdog is not None:
            self.watchdog.stop()

    def _in_memory(self, name: str) -> AbstractContextManager[None]:
        """Around the engine's reads and writes of worker ``name``'s memory: past the
        deadline the worker is ended (``worker_memory.Watchdog``)."""
        assert self.watchdog is not None
        return self.watchdog.watching(self.ends[name].pid)

    def _receive(self, name: str) -> str:
        # (while it is sampled, its rings are read as they fill: a ring left full until the
        # call's end dropped its last samples, the code that ran late in it: the eighth red team)
        sampler = self.samplers.get(name) if self.sampling else None
        waiting = None
        if sampler is not None:
            waiting = lambda: sampler.drain(keep=self.calling)  # noqa: E731
        return _receive(self.ends[name], self.alive[name], self.deadline, waiting)

    def connect(self, name: str) -> None:
        self.current = name
        _accept(self.ends[name], self.alive[name], self.deadline)
        if self.cpu_clock:
            self.ledgers[name] = proc_clock.Ledger(proc_clock.sandbox_root(self.ends[name].pid))

    def await_ready(self, name: str) -> None:
        self.current = name
        line = self._receive(name)
        said, _, layout = line.partition(" ")
        if said != protocol.READY or bool(layout) != (self.moved is not None):
            raise _Stop("garbled", _out_of_turn(line, "'ready'"))
        self.result.mapped[name] = kernel_evidence.mapped_files(self.ends[name].pid)
        if self.cpu_clock and not proc_clock.cannot_start_tasks(self.ends[name].pid):
            raise _Stop("garbled", "it may still start processes (its process limit is not 0)")
        if self.cpu_clock:
            self._count_processes(name)
        if self.moved is not None:
            try:
                self.layouts[name] = worker_memory.parse_layout(layout, name == BASELINE)
            except ValueError as exc:
                raise _Stop("garbled", str(exc)) from None
            self._sample(name)
            try:
                self.memory[name] = worker_memory.Memory(self.ends[name].pid)
            except OSError as exc:
                raise _Stop(
                    "unreadable",
                    f"the engine cannot open the worker's memory (/proc/<pid>/mem: "
                    f"{exc.strerror or exc}); timing on the CPU device writes its inputs and "
                    "reads its outputs there (a kernel that forbids it, e.g. "
                    "kernel.yama.ptrace_scope above 1, cannot time CPU programs)",
                ) from None

    def _sample(self, name: str) -> None:
        """(moved) Worker ``name``'s threads sampled in its calls' windows from now on; where
        the kernel refuses, why (``Drive.samples``)."""
        assert self.moved is not None
        builds = self.moved.builds if name != BASELINE else frozenset()
        try:
            self.samplers[name] = code_samples.Sampler(self.ends[name].pid, builds=builds)
        except OSError as exc:
            self.result.samples[name] = code_samples.Samples(error=str(exc))

    def judge_own_pages(self) -> None:
        """(moved) The pages of the candidate's builds its samples fell on, judged: those whose
        content is a page of a library the baseline's worker runs, or not the placed file's,
        are not its own code (a build can hold a copy of another library, mapped over that
        library's code: the eighth red team's a03 ran torch's and libc's code from copies
        under its build folders)."""
        name = next((n for n in self.ends if n != BASELINE), "")
        sampler, base = self.samplers.get(name), self.samplers.get(BASELINE)
        own = sampler.own_mappings() if sampler is not None else []
        if sampler is None or not own:
            return
        try:
            theirs = (
                base.samples.mappings
                if base is not None
                else code_samples.code_mappings(self.ends[BASELINE].pid)
            )
            with self._in_memory(name):
                sampler.judge(
                    lambda pages: code_samples.copied_pages(
                        self.memory[name].read, own, theirs, pages
                    )
                )
        except OSError as exc:
            raise _Stop("unreadable", f"its builds' code cannot be read: {exc}") from None

    def sample_enough(self, r: int) -> None:
        """(moved) Where the candidate's timed calls were too short for the kernel's samples
        to show whether its own code runs (under ``code_samples.CONCLUSIVE``, none of them its
        own yet), and a build of its own was mapped into its process when timing began, more
        of its calls, ordered and checked as the timed ones, untimed, until they can (or
        ``EVIDENCE_CALLS`` more)."""
        name = next((n for n in self.ends if n != BASELINE), None)
        sampler = self.samplers.get(name or "")
        if name is None or sampler is None or not self.drawn or self.moved is None:
            return
        if not sampler.own_mappings():
            return  # (no code of its own to look for)
        for extra in range(EVIDENCE_CALLS):
            self.judge_own_pages()
            samples = sampler.samples
            if samples.taken >= code_samples.CONCLUSIVE or any(samples.own):
                break  # (enough to tell, or its own code already seen)
            self.current = name
            self._moved_call(name, r + extra, "cand", timed=False)

    def start_sampling(self) -> None:
        """(moved) Every worker's threads sampled from its first timed call to its last (all
        four windows of each: sampling has a cost of its own when it starts, which the
        windows of one worker would bear and the other's not); the samples judged are those
        of each call's window (the harness's own steps around it would dilute them)."""
        for sampler in self.samplers.values():
            sampler.start()
        self.sampling = True

    def finish_sampling(self) -> None:
        self.sampling = False
        for sampler in self.samplers.values():
            sampler.stop(keep=False)  # (it sleeps: nothing of a call is left)
        self.judge_own_pages()
        for name, sampler in self.samplers.items():
            self.result.samples[name] = sampler.finish()

    def _count_processes(self, name: str) -> None:
        """No more processes, and no more threads, in a worker's sandbox than in the
        baseline's when timing begins (the same harness in both; none can start after): one
        the candidate started before its process limit dropped would run beside the others'
        timed calls (slowing them) or beside its own (where the kernel charges a thread that
        runs on another core only at its next tick or switch, which may fall outside the
        window: only the worker's own thread, asleep when read, is settled)."""
        self.processes[name] = counted = self._tasks(name)
        base = self.processes.get(BASELINE, counted)
        for _ in range(COUNT_TRIES):  # (a thread the harness just ended may still be listed)
            if counted[0] <= base[0] and counted[1] <= base[1]:
                break
            time.sleep(COUNT_PAUSE_S)
            counted = self._tasks(name)
        extra = [n - b for n, b in zip(counted, base)]
        if extra[0] > 0 or extra[1] > 0:
            raise _Stop(
                "garbled",
                f"{extra[0]} more process(es) and {extra[1]} more thread(s) in its sandbox "
                "than in the baseline's when timing began (started before it could start no "
                "more)",
            )

    def _tasks(self, name: str) -> tuple[int, int]:
        """The processes and threads in worker ``name``'s sandbox now."""
        pids = proc_clock.tree_cpu(self.ledgers[name].root)
        return len(pids), sum(proc_clock.task_count(pid) for pid in pids)

    def draw(self, r: int, seed: int) -> None:
        """(moved) The baseline's worker draws call r's inputs; the engine reads them out and
        keeps them in files of its own until call r (``inputs_of``)."""
        self.current = BASELINE
        _, _, line = self._step(BASELINE, lambda end: end.tell(f"{protocol.DRAW} {r} {seed}"))
        if line != f"{protocol.DRAWN} {r}":
            raise _Stop("garbled", _out_of_turn(line, f"'{protocol.DRAWN} {r}'"))
        memory = self.memory[BASELINE]
        assert self.moved is not None
        try:
            with self._in_memory(BASELINE):
                for i, (address, size) in enumerate(self.layouts[BASELINE]["staging"]):
                    data = memory.read(address, size)
                    (self.moved.keep / f"inputs_{r}_{i}.bin").write_bytes(data)
        except OSError as exc:
            raise _Stop("unreadable", f"reading the drawn inputs failed: {exc}") from None

    def inputs_of(self, r: int) -> list[bytes]:
        """(moved) Call r's inputs as drawn (and the files they were kept in, removed)."""
        assert self.moved is not None
        drawn = []
        for i in range(len(self.layouts[BASELINE]["staging"])):
            path = self.moved.keep / f"inputs_{r}_{i}.bin"
            drawn.append(path.read_bytes())
            path.unlink()
        return drawn

    def _hand_inputs(self, name: str) -> None:
        """(moved) Call r's inputs written into worker ``name``'s input buffers."""
        spans = self.layouts[name]["inputs"]
        sizes = [n for _, n in spans]
        if sizes != [len(data) for data in self.drawn]:
            raise _Stop(
                "garbled",
                f"its input buffers ({sizes} bytes) are not the inputs' "
                f"({[len(d) for d in self.drawn]} bytes)",
            )
        try:
            with self._in_memory(name):
                for (address, _), data in zip(spans, self.drawn):
                    self.memory[name].write(address, data)
        except OSError as exc:
            if self.watchdog is not None and self.watchdog.killed:
                raise _Stop("overran") from None
            raise _Stop("garbled", f"its input buffers could not be written: {exc}") from None

    def call(self, name: str, r: int, who: str, seed: int) -> None:
        """Timed call r of ``who`` in worker ``name``; the worker's checks after it are untimed.
        Moved (the CPU device): one window, from writing its inputs to reading its output. Else
        four windows, each from its order to its answer: the inputs, the flush, the call, the
        output kept."""
        self.current = name
        if self.moved is not None:  # (nothing between its calls: it checks itself after the last)
            self._moved_call(name, r, who)
        else:
            self._call_in_steps(name, r, who, seed)
            self.ends[name].tell(protocol.SETTLE)
            line = self._receive(name)  # its checks, untimed
            if line != protocol.SETTLED:
                raise _Stop("garbled", _out_of_turn(line, "'settled'"))
        ended = self.ledgers[name].ended if self.cpu_clock else set()
        if ended:  # (its CPU up to its end cannot be known: nothing is reaped honestly)
            raise _Stop("garbled", f"{len(ended)} of its processes ended during timing")

    def _moved_call(self, name: str, r: int, who: str, timed: bool = True) -> None:
        """Four windows, each starting where the worker's last one stopped (``_step``): ``arm``
        (the order; the worker lets its last output go and answers ``armed``), ``ping``
        (answered where the worker waits for ``go``: in the baseline's worker, the least glue a
        window holds, ``Drive.ping_ms``), the call's window (the inputs written into the
        worker, ``go``, the call, ``done``) and ``describe`` (the worker checks and describes
        its output, the engine reads it out). The call's window is the measure; what the
        worker spends on the others beyond the baseline's worker's same steps is charged to it
        as well (``charged_ms``), and what it spends below them credits nothing: the glue
        a leaner serving loop could shave is out of the window. Not ``timed`` (a call for the
        kernel's samples only): checked the same, its times and output not kept."""
        output: list[bytes] = []
        described: list[worker_memory.Output] = []
        prefix = f"{r} {who} "
        arm_took, arm_cpu, line = self._step(name, lambda end: end.order(r, who, 0))
        if line == prefix + "none":  # (a contender the worker could not make: no time)
            return
        if line != prefix + protocol.ARMED:
            raise _Stop("garbled", _out_of_turn(line, f"'{prefix}{protocol.ARMED}'"))
        ping_took, ping_cpu, line = self._step(name, lambda end: end.tell(protocol.PING))
        if line != protocol.PONG:
            raise _Stop("garbled", _out_of_turn(line, f"'{protocol.PONG}'"))
        if self.cpu_clock and name == BASELINE and timed:
            self.result.ping_ms.append(ping_cpu)

        sampler = self.samplers.get(name)

        def go(end: protocol.EngineEnds) -> None:
            self._hand_inputs(name)
            if sampler is not None:  # (the samples judged are the call's: its order's and
                sampler.drain(keep=False)  # its ping's are dropped, as the describe step's)
            self.calling = True
            end.tell(protocol.GO)

        try:
            took, cpu, line = self._step(name, go)
        finally:
            self.calling = False
        if sampler is not None:
            sampler.drain()
        if line != protocol.DONE:
            raise _Stop("garbled", _out_of_turn(line, f"'{protocol.DONE}'"))

        def read_out(line: str) -> None:
            if not line.startswith(prefix + protocol.OUT + " "):
                raise _Stop("garbled", _out_of_turn(line, f"the answer to '{r} {who}'"))
            try:
                out = worker_memory.parse_output(line.removeprefix(prefix + protocol.OUT + " "))
                assert self.moved is not None
                if (out.shape, out.dtype) != (self.moved.shape, self.moved.dtype):
                    raise _Stop(
                        "wrong_output",
                        f"the output of timed call {r + 1} is {out.dtype} of shape {out.shape}, "
                        f"where the problem's is {self.moved.dtype} of shape {self.moved.shape}",
                    )
                elements = math.prod(out.shape)
                if out.extent() > SPREAD_ELEMENTS * elements + 2**20 // out.itemsize:
                    raise _Stop(
                        "wrong_output",
                        f"the output of timed call {r + 1} is spread over {out.extent()} "
                        f"elements' room for its {elements} elements (its strides "
                        f"{out.stride}): return it contiguous",
                    )
                if name != BASELINE:  # (a reference may work in place: it is trusted)
                    self._not_over_its_inputs(name, r, out)
                with self._in_memory(name):
                    output.append(self.memory[name].read_output(out))
                    if name != BASELINE and not self.moved.in_place:
                        self._inputs_unchanged(name, r)
            except (ValueError, OSError) as exc:
                if self.watchdog is not None and self.watchdog.killed:
                    raise _Stop("overran") from None
                raise _Stop(
                    "garbled", f"its output of call {r + 1} cannot be read: {exc}"
                ) from None
            described.append(out)

        told = self._step(name, lambda end: end.tell(protocol.DESCRIBE), read_out)
        if sampler is not None:  # (the describe step's samples dropped: it sleeps now)
            sampler.drain(keep=False)
        if not timed:
            return
        steps = self.result.steps_ms[who]
        steps["arm"].append(self._measure(arm_took, arm_cpu))
        steps["ping"].append(self._measure(ping_took, ping_cpu))
        steps["describe"].append(self._measure(told[0], told[1]))
        if described:  # (what the engine read is the output the judge sees: no digest needed)
            out = described[0]
            self.result.seen_ms[who].append(took)
            if self.cpu_clock:
                self.result.cpu_ms[who].append(cpu)
            assert self.moved is not None
            path = self.moved.keep / f"{who}_{r}.bin"
            path.write_bytes(output[0])
            self.result.outputs[who].append(
                {"path": str(path), "dtype": out.dtype, "shape": out.shape, "stride": out.stride}
            )

    def _not_over_its_inputs(self, name: str, r: int, out: worker_memory.Output) -> None:
        """An output that lies partly over an input buffer (not a view inside it), an output in
        shared memory, or an input buffer anywhere but private anonymous memory, is refused:
        the engine's write of the inputs would have done part of the call's work (an input
        buffer declared inside the output, so the engine copies that input into it: the third
        red team's a12; the same pages mapped at both, through a memfd: the fourth's
        a04/a07/a10; a memfd mapped shared at both only while the engine writes, and privately
        again by the time it looks: the fifth's a03). Pages behind an input buffer that is
        private and anonymous after the call hold what the engine wrote there and nothing
        else can reach them: no call makes that so again without copying."""
        low, high = out.address, out.address + out.extent() * out.itemsize
        spans = self.layouts[name]["inputs"]
        for k, (address, size) in enumerate(spans):
            inside = address <= low and high <= address + size
            if low < address + size and address < high and not inside:
                raise _Stop(
                    "garbled",
                    f"the output of timed call {r + 1} lies partly over its input {k + 1}'s "
                    "buffer (where the engine writes that input)",
                )
        try:
            mapped = worker_memory.mappings(self.ends[name].pid)
        except OSError as exc:
            raise _Stop("unreadable", f"its memory map cannot be read: {exc}") from None
        if high > low and any(m.shared and m.overlaps(low, high - low) for m in mapped):
            raise _Stop(
                "garbled",
                f"after timed call {r + 1} its output lies in shared memory (a mapping other "
                "addresses of its process can reach: outputs must be its own private memory)",
            )
        for k, (address, size) in enumerate(spans):
            if any(not m.anonymous or m.shared for m in mapped if m.overlaps(address, size)):
                raise _Stop(
                    "garbled",
                    f"after timed call {r + 1} its input {k + 1}'s buffer is not in private "
                    "anonymous memory, where the worker made it (a file or memfd mapped there "
                    "can carry what the engine writes to other addresses)",
                )

    def _inputs_unchanged(self, name: str, r: int) -> None:
        """Every input buffer still holds what the engine wrote into it (inputs are read,
        never written, by a call: one that wrote into them worked in memory the engine
        filled on its behalf)."""
        memory = self.memory[name]
        for k, ((address, size), data) in enumerate(zip(self.layouts[name]["inputs"], self.drawn)):
            if memory.read(address, size) != data:
                raise _Stop("garbled", f"timed call {r + 1} changed its input {k + 1}")

    def _call_in_steps(self, name: str, r: int, who: str, seed: int) -> None:
        took, cpu, line = self._step(name, lambda end: end.order(r, who, seed))
        match = _INPUTS.fullmatch(line)
        if match is None or (int(match[1]), match[2]) != (r, who):
            raise _Stop("garbled", _out_of_turn(line, f"'{r} {who} inputs'"))
        if match[3] == "inputs":  # ('none': a contender the worker could not make, no time)
            spent = {"inputs": self._measure(took, cpu)}
            for order, answer in (
                (protocol.FLUSH, protocol.FLUSHED),
                (protocol.CALL, protocol.CALLED),
            ):
                took, cpu, line = self._step(name, lambda end, order=order: end.tell(order))
                if line != answer:
                    raise _Stop("garbled", _out_of_turn(line, f"'{answer}'"))
                spent[order] = self._measure(took, cpu)
            call_took, call_cpu = took, cpu
            took, cpu, line = self._step(name, lambda end: end.tell(protocol.KEEP))
            spent[protocol.KEEP] = self._measure(took, cpu)
            self._record(line, r, who, call_took, call_cpu)
            for step in STEPS:
                self.result.steps_ms[who][step].append(spent[step])

    def _measure(self, took: float, cpu: float) -> float:
        return cpu if self.cpu_clock else took

    def _step(
        self,
        name: str,
        order: Callable[[protocol.EngineEnds], None],
        then: Callable[[str], None] | None = None,
    ) -> tuple[float, float, str]:
        """One window: an ``order`` to worker ``name`` and its answer (and ``then``, given the
        answer once the worker sleeps again, still inside the window). Returns the wall time
        and the CPU time of its sandbox over the window (ms), and the answer. Once a worker's
        timed calls have begun, its windows are clocked end to end (``since``): each starts
        where its last stopped, so what its sandbox spends between them (while the engine
        works, or another worker's call is timed) is in its next."""
        end, ledgers = self.ends[name], self.ledgers
        if self.cpu_clock:  # every worker waiting, its CPU time settled
            for other_end in self.ends.values():
                proc_clock.wait_asleep(other_end.pid)
        before = {n: ledger.read_ns() for n, ledger in ledgers.items()}
        if name in self.since:
            before[name] = self.since[name]
        started = time.perf_counter()
        order(end)
        line = self._receive(name)
        if self.cpu_clock:  # (it waits for its next order now: its CPU time stands still)
            proc_clock.wait_asleep(end.pid)
        if then is not None:
            then(line)
        took = (time.perf_counter() - started) * 1e3
        after = {n: ledger.read_ns() for n, ledger in ledgers.items()}
        if self.timing and name in after:
            self.since[name] = after[name]
        spent = {n: (after[n] - before[n]) / 1e6 for n in ledgers}
        for other in ledgers:
            if other != name:
                self.result.idle_cpu_ms[other] = (
                    self.result.idle_cpu_ms.get(other, 0.0) + spent[other]
                )
                self.result.others_ms[other] = self.result.others_ms.get(other, 0.0) + took
        return took, spent.get(name, 0.0), line

    def _record(self, line: str, r: int, who: str, took: float, cpu: float) -> None:
        """The answer to call r of ``who``: its call's window and the digest it committed to."""
        match = _ANSWER.fullmatch(line)
        if match is None or (int(match[1]), match[2]) != (r, who):
            raise _Stop("garbled", _out_of_turn(line, f"the answer to '{r} {who}'"))
        self.result.seen_ms[who].append(took)
        self.result.digests[who].append(match[3])
        if self.cpu_clock:
            self.result.cpu_ms[who].append(cpu)


def _out_of_turn(line: str, due: str) -> str:
    return f"an answer out of turn ({line[:80]!r} where {due} was due)"


async def drive(
    workers: dict[str, Worker],
    contenders: dict[str, list[str]],
    ends: dict[str, protocol.EngineEnds],
    seeds: list[int],
    deadline: float,
    cpu_clock: bool = False,
    moved: Moved | None = None,
) -> Drive:
    """``drive_blocking`` in a thread of its own: the clock is not the event loop's (which
    serves LLM calls and other evaluations), and the loop stays free meanwhile."""
    alive = {name: _alive(worker) for name, worker in workers.items()}
    return await asyncio.to_thread(
        drive_blocking, ends, contenders, alive, seeds, deadline, cpu_clock, moved
    )


def _alive(worker: Worker) -> Callable[[], bool]:
    return lambda: not worker.task.done()


#: CPU a waiting worker's sandbox may use while the others are timed, in all, before its
#: share of their windows counts (a stray wake-up of its threads is tens of microseconds).
IDLE_FLOOR_MS = 2.0


def busy_while_others_timed(drive: Drive, name: str) -> float:
    """The share of the other workers' timed windows during which ``name``'s sandbox used a
    CPU (0: it waited for its order, as a worker does; near 1: a core of its own kept busy
    beside the others' calls, which slows what it is compared with)."""
    others, idle = drive.others_ms.get(name, 0.0), drive.idle_cpu_ms.get(name, 0.0)
    return idle / others if others > 0 and idle > IDLE_FLOOR_MS else 0.0


def candidate_ms(
    seen_cand: list[float], seen_base: list[float], base_ms: list[float]
) -> list[float]:
    """The candidate's timed calls on the engine's clock, less the glue of the call's window
    (the order and the answer on the socket): the median, over the baseline's calls, of its
    window minus the call itself as the baseline's worker timed it (a worker with no
    candidate in it). An honest candidate's value estimates what its own timer would say; a
    forged timer changes nothing here, and no harness step is in the window to be skipped."""
    overhead = glue_ms(seen_base, base_ms)
    return [max(s - overhead, 0.0) for s in seen_cand]


def glue_ms(seen_base: list[float], base_ms: list[float]) -> float:
    """The glue in the baseline's windows: the median of each window less the call itself as
    the baseline's worker timed it."""
    return statistics.median(s - b for s, b in zip(seen_base, base_ms))


#: A harness step in the candidate's worker that took less than this share of the same step in
#: the baseline's worker (medians over the timed calls) did not run as the harness wrote it:
#: the same code on the same sizes, in two processes of the same image (GPU: the CPU device
#: runs no harness step in the worker). When the CPU device still did, honest runs on a
#: loaded 2-core machine stayed within 0.75-1.3, and a flush whose buffer a candidate emptied
#: took about the socket's glue alone, under 0.3 (docs/evaluation-validity.md, part E).
SKIPPED_SHARE = 0.6


def _medians(drive: Drive, who: str) -> dict[str, float]:
    return {step: statistics.median(ms) for step, ms in drive.steps_ms.get(who, {}).items() if ms}


def steps_medians(drive: Drive) -> dict[str, list[float]]:
    """Per harness step: [the candidate's worker's median ms, the baseline's] (a report)."""
    cand, base = _medians(drive, "cand"), _medians(drive, "base")
    return {
        step: [cand[step], base[step]]
        for step in STEPS + MOVED_STEPS
        if step in cand and step in base
    }


def skipped_steps(drive: Drive) -> list[tuple[str, float, float]]:
    """The harness's steps (``STEPS``) the candidate's worker spent far less on than the
    baseline's worker did: (step, the candidate's median ms, the baseline's)."""
    cand, base = _medians(drive, "cand"), _medians(drive, "base")
    return [
        (step, cand[step], base[step])
        for step in STEPS
        if step in cand and step in base and cand[step] < SKIPPED_SHARE * base[step]
    ]


def charged_ms(drive: Drive, calls_ms: list[float]) -> list[float]:
    """Each candidate call's time: ``calls_ms`` (its call's window, less the glue) plus, step
    by step, what its worker spent on that call's harness steps beyond the baseline's worker on
    the same call (the GPU's ``STEPS``, or the CPU device's ``MOVED_STEPS``). Summed call by
    call before any median is taken: work a candidate moves into a step on some calls is in
    those calls' times (a median of the windows and a mean of the steps let work moved into
    ``describe`` on 21 calls of 40 pass with 21/40 of it charged: the sixth red team's a02, a03,
    a07, a09). A step the candidate's worker runs leaner than the baseline's credits nothing:
    each step's differences are lifted by its median where that is below 0. Paired by call:
    the two workers' steps of one call run moments apart, so load that comes and goes cancels
    out of the difference."""
    cand, base = drive.steps_ms.get("cand", {}), drive.steps_ms.get("base", {})
    totals = list(calls_ms)
    for step in STEPS + MOVED_STEPS:
        diffs = [c - b for c, b in zip(cand.get(step, []), base.get(step, []))]
        if not diffs:
            continue
        lean = min(statistics.median(diffs), 0.0)
        for r, diff in enumerate(diffs[: len(totals)]):
            totals[r] += diff - lean
    return [max(ms, 0.0) for ms in totals]


def overstated_calls(reported_ms: list[float], seen_ms: list[float]) -> list[int]:
    """The calls a worker says took longer than the engine saw pass between ordering them and
    their answer: impossible for an honest worker, whose call lies inside that window."""
    return [r for r, (took, seen) in enumerate(zip(reported_ms, seen_ms)) if took > seen]
