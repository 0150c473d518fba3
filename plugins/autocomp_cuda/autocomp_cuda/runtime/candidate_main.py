"""Candidate worker: imports one candidate, runs it, and writes what it produced.

Run as ``python -m autocomp_cuda.runtime.candidate_main JOB.json [--wait IDLE_S]`` inside the
sandbox. With ``--wait`` the worker starts ahead of need: it imports torch (and Triton, and
initialises CUDA), writes ``ready`` and waits up to IDLE_S seconds for the engine to write
JOB.json; it still serves exactly one candidate. Modes: ``build`` imports the candidate only
(its module-level ``load_inline`` calls compile into the content-hashed build directory);
``eval`` runs the phases load, correctness and timing; ``compile`` only compiles the
``torch.compile`` baseline into the job's ``inductor_cache`` (no candidate exists in it: the
harness keeps that cache and hands each candidate's worker a copy). The reference output
never exists in this process: correctness is judged by the parent from the files written here. Each phase
arms a watchdog that ends the process (exit code 1 after writing ``Timeout (...)!`` and a
traceback to ``watchdog.txt``) if the phase overruns; ``phase.txt`` names the phase.

Nothing this process says is believed as it stands. The timed calls are measured by the
engine (``runtime/lockstep.py``: the CPU time the kernel charged this sandbox, or the wall
clock, from each order to its answer), the answer commits to the digest of the call's output,
and every output is judged in another process. What is checked in here is a courtesy that
names an attack early: the identity of guarded torch and time functions and the global
numeric flags are compared before and after, outputs must be exact ``torch.Tensor`` objects
that do not change after the call returns, inputs, parameters and buffers are checksummed
around every call, and no thread may outlive a call.
"""

from __future__ import annotations

import copy
import faulthandler
import gc
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

# Bound before any candidate code exists in this process.
_perf = time.perf_counter
_setrlimit = resource.setrlimit
_cpu_ns = time.thread_time_ns  # (the process clock ticks in ms under RLIMIT_CPU)
_sleep = time.sleep
_enumerate_threads = threading.enumerate
_gc_disable, _gc_enable, _gc_isenabled = gc.disable, gc.enable, gc.isenabled

import torch  # noqa: E402

# The operations the harness itself runs between timed calls (the cache flush, loading the
# next inputs, copying an output out), bound now: a candidate that replaces the class
# attribute (``type.__setattr__(torch.Tensor, "add_", ...)``) does not change what these call,
# so it cannot compute its next output inside the flush, outside the clock.
_add_ = torch.Tensor.add_
_copy_ = torch.Tensor.copy_
_clone = torch.Tensor.clone
_detach = torch.Tensor.detach
_to_cpu = torch.Tensor.cpu

from . import common, cpu_caches, lockstep, steady_heap  # noqa: E402
from .guards import diff, snapshot_flags, snapshot_functions, state_checksums  # noqa: E402
from .kernels import KernelCounter, inductor_binaries  # noqa: E402
from .persisting_l2 import PersistingL2  # noqa: E402

_digest = lockstep.output_digest
# the CPU device's messages around a timed call, as bytes (runtime/lockstep.py)
_LINE = 64
_PING, _PONG = f"{lockstep.PING}\n".encode(), f"{lockstep.PONG}\n".encode()
_GO, _DONE = f"{lockstep.GO}\n".encode(), f"{lockstep.DONE}\n".encode()

try:  # at import, so a preload server (sandbox.preload) pays it once for every worker
    import triton  # noqa: F401
except Exception:
    pass


#: The buffers handed to the judge after the first trial: every one up to this size (running
#: statistics are one value per channel).
MAX_BUFFER_ELEMENTS = 1 << 20


class Rejected(Exception):
    """The candidate did something a genuine kernel never needs to do."""


class Failed(Exception):
    def __init__(self, status: str, message: str, detail: str = ""):
        super().__init__(message)
        self.status, self.message, self.detail = status, message, detail

    @classmethod
    def loading(cls, what: str, exc: Exception) -> Failed:
        """``what`` raised while the candidate was loaded: classified from the exception."""
        return cls(
            common.classify_exception(exc, common.LOAD_ERROR),
            f"{what} failed: {type(exc).__name__}: {exc}",
            common.short_traceback(exc),
        )


# --------------------------------------------------------------------------- phases


class Worker:
    def __init__(self, job: dict[str, Any]):
        self.job = job
        self.work = Path(job["work_dir"])
        self.device = torch.device(job["device"])
        self.result: dict[str, Any] = {
            "status": common.OK,
            "flags": [],
            "phase": "setup",
            "phase_s": {},
        }
        self.counter = KernelCounter(job.get("prebuilt") or "")
        self.threads_before: set[int | None] = set()
        # the process's tasks before the candidate was imported (the baseline's worker: when
        # timing began)
        self.native_threads: set[str] | None = None
        self.watchdog_threads: set[str] = set()
        self.persisting_l2: PersistingL2 | None = None  # on a GPU: read after every candidate call
        self.last_cpu_ms: float | None = None  # CPU device: the process's CPU time in the last call
        self.phase_started = _perf()
        # The watchdog writes its 'Timeout (...)!' here, not to stderr: a candidate that
        # floods stderr past what the engine keeps cannot bury it.
        self.watchdog = open(self.work / "watchdog.txt", "w")

    # -- bookkeeping
    def phase(self, name: str) -> None:
        """Enter a phase: its watchdog is armed and the previous phase's duration recorded."""
        self.end_phase()
        self.result["phase"] = name
        (self.work / "phase.txt").write_text(name)
        faulthandler.cancel_dump_traceback_later()
        limit = float(self.job["phase_timeouts"].get(name, 0) or 0)
        if limit > 0:
            known = _native_threads()
            faulthandler.dump_traceback_later(limit, exit=True, file=self.watchdog)
            # the watchdog's thread, made anew at each arming: the harness's, not the candidate's
            self.watchdog_threads = _native_threads() - known

    def end_phase(self) -> None:
        now = _perf()
        spent = self.result["phase_s"]
        spent[self.result["phase"]] = (
            spent.get(self.result["phase"], 0.0) + now - self.phase_started
        )
        self.phase_started = now

    def save(self, value: Any, name: str) -> None:
        """Write outputs for the judge; the time it takes is reported on its own."""
        t0 = _perf()
        torch.save(value, self.work / name)
        took = _perf() - t0
        spent = self.result["phase_s"]
        spent["output_write"] = spent.get("output_write", 0.0) + took
        self.phase_started += took  # not counted in the phase too

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def check_carve_out(self, when: str) -> None:
        """A persisting-L2 carve-out left after a call keeps inputs cached across timed calls."""
        carved = self.persisting_l2.limit_bytes() if self.persisting_l2 is not None else None
        if carved:
            raise Rejected(
                f"{when}: a persisting-L2 carve-out of {carved} bytes was left set "
                "(cached lines survive the harness's cache flush between timed calls)"
            )

    def check_threads(self, when: str) -> None:
        """No thread the candidate started may outlive its call: work done there is done
        outside the clock (or, in correctness, after the output was taken)."""
        new_threads = [
            t.name
            for t in _enumerate_threads()
            if t.ident not in self.threads_before and t.is_alive()
        ]
        if new_threads:
            raise Rejected(f"threads still running {when}: {', '.join(new_threads)}")
        if self.native_threads is not None:  # threads started in C++ too (CPU device)
            extra = _native_threads() - self.native_threads - self.watchdog_threads
            if extra:
                raise Rejected(
                    f"{len(extra)} native thread(s) started by the candidate still running {when}"
                )

    def check_guards(self, when: str) -> None:
        changed = diff(self.functions, snapshot_functions())
        if changed:
            raise Rejected(f"{when}: harness functions were replaced: {', '.join(changed)}")
        changed = diff(self.flags, snapshot_flags())
        if changed:
            raise Rejected(
                f"{when}: global numeric/backend flags were changed: {', '.join(changed)}"
            )

    # -- setup: reference pieces the candidate may use (weights) and the baseline model
    def setup(self) -> None:
        self.result["info"] = common.device_info(self.device)
        if self.job["mode"] == "build":
            return
        if self.job.get("timing") and self.job["mode"] in ("eval", "baseline"):
            # the line to the engine's clock, made before any candidate code exists here
            self.ends = lockstep.WorkerEnds(self.work)
        if self.device.type == "cpu":
            # One intra-op thread for everything timed on the CPU device: a parallel region
            # waits milliseconds for a second OpenMP thread on a busy small machine, noise
            # that hides an honest 1.5x. The baseline's worker runs the same way.
            torch.set_num_threads(1)
        if self.device.type == "cuda":
            torch.cuda.init()  # loads the CUDA runtime, so its library can be found
            self.persisting_l2 = PersistingL2()
            self.result["info"]["persisting_l2_checked"] = self.persisting_l2.available
        problem = self.job["problem"]
        self.reference = common.load_module(
            problem["path"], "reference_problem", problem.get("overrides")
        )
        init = torch.load(
            self.work / "init.pt", weights_only=False
        )  # written by our reference worker
        self.init_inputs = init["init_inputs"]
        self.state_dict = init["state_dict"]
        # Inputs are regenerated from the trial seeds: no reference data is ever handed over.
        self.trials = [
            common.make_inputs(
                self.reference,
                int(s),
                torch.device("cpu") if self.device.type == "cpu" else self.device,
                common.trial_variant(self.job, k),
            )
            for k, s in enumerate(self.job["trial_seeds"])
        ]
        self.result["input_checksums"] = [common.input_checksums(t) for t in self.trials]
        self.compiled = None
        if self.job["mode"] == "eval":
            return  # the candidate's worker holds no baseline: another worker times it
        common.seed_all(int(self.job["init_seed"]))
        self.baseline = self.reference.Model(*self.init_inputs)
        self.baseline.load_state_dict(self.state_dict)
        self.baseline = self.baseline.to(self.device)
        if (self.job.get("timing") or {}).get("compile_baseline"):
            # Compiled now, before any candidate code exists in this process. Its kernels (on
            # a GPU, their Triton kernels too) go to the compiled baseline's own cache, never
            # to the candidate's Triton cache (set only once this is done).
            os.environ.pop("TRITON_CACHE_DIR", None)
            inductor_cache = self.job.get("inductor_cache")
            if inductor_cache:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache
            kernels_before = inductor_binaries(inductor_cache)
            self.compiled = torch.compile(copy.deepcopy(self.baseline))
            with torch.no_grad():
                self.compiled(*[common.to_device(x, self.device) for x in self.trials[0]])
            self.sync()
            built = len(inductor_binaries(inductor_cache) - kernels_before)
        self.result["info"] = common.device_info(self.device)
        if self.compiled is not None:  # 0 where the compiled baseline's copy had it all
            self.result["info"]["compiled_baseline_binaries_built"] = built

    def load_candidate(self) -> None:
        os.environ.pop("TRITON_CACHE_DIR", None)  # (torch.compile set it to the baseline's)
        if self.job.get("triton_cache"):
            os.environ["TRITON_CACHE_DIR"] = self.job["triton_cache"]
        source = Path(self.job["candidate"]).read_text()
        self.counter.install(source, self.job["mode"] == "build", self.device.type == "cpu")
        self.functions = snapshot_functions()
        self.flags = snapshot_flags()
        self.threads_before = {t.ident for t in threading.enumerate()}
        if self.device.type == "cpu" and self.job["mode"] == "eval":
            # The kernel's list of this process's threads before any candidate code runs: a
            # thread started at import through _thread has no threading.Thread to list.
            self.native_threads = _native_threads()
        try:
            # The problem's size constants hold in the candidate's module too (a forward that
            # reads a global batch size sees the one the inputs were made with).
            overrides = (self.job.get("problem") or {}).get("overrides")
            self.module = common.load_module(self.job["candidate"], "candidate", overrides)
        except Exception as exc:
            raise Failed.loading("importing the candidate", exc) from exc
        if self.job["mode"] == "build":
            self.result["built"] = self.counter.built
            return
        # A reference file (the baseline program as shipped) defines Model only: it is its own ModelNew.
        cls = getattr(self.module, "ModelNew", None) or getattr(self.module, "Model", None)
        if cls is None:
            raise Failed(common.LOAD_ERROR, "the candidate defines no ModelNew class")
        try:
            common.seed_all(int(self.job["init_seed"]))
            model = cls(*copy.deepcopy(self.init_inputs))
            model = model.to(self.device)
        except Exception as exc:
            raise Failed.loading("ModelNew(*init_inputs)", exc) from exc
        if not isinstance(model, torch.nn.Module):
            raise Failed(common.LOAD_ERROR, "ModelNew is not a torch.nn.Module")
        self.copy_weights(model)
        self.model = model
        self.check_guards("after import")

    def copy_weights(self, model: torch.nn.Module) -> None:
        """Reference weights go into ModelNew wherever name and shape agree (no RNG-order luck)."""
        own = model.state_dict()
        copied, skipped = 0, []
        with torch.no_grad():
            for name, value in self.state_dict.items():
                if name in own and own[name].shape == value.shape:
                    own[name].copy_(value.to(own[name].device, own[name].dtype))
                    copied += 1
                else:
                    skipped.append(name)
        self.result["weights_copied"] = copied
        self.result["weights_unmatched"] = skipped[:20]

    def call(self, inputs: list[Any]) -> torch.Tensor:
        with torch.no_grad():
            out = self.model(*inputs)
        self.sync()
        return out

    def vet_output(
        self, out: Any, inputs_before: list[Any], inputs: list[Any], state_before: dict
    ) -> torch.Tensor:
        if type(out) is not torch.Tensor:
            raise Rejected(
                f"forward returned {type(out).__module__}.{type(out).__name__}, not a plain torch.Tensor "
                "(tensor subclasses and lazy results are refused)"
            )
        if out.device.type != self.device.type:
            raise Failed(common.MISMATCH, f"output is on {out.device}, expected {self.device.type}")
        self.check_threads("after forward returned")
        snapshot = out.detach().clone()
        _sleep(float(self.job.get("settle_s", 0.02)))
        self.sync()
        if not torch.equal(snapshot, out) and not (
            torch.isnan(snapshot).any()
            and torch.equal(torch.nan_to_num(snapshot), torch.nan_to_num(out))
        ):
            raise Rejected(
                "the output kept changing after forward returned (work finishing in the background)"
            )
        if not self.job.get("in_place"):
            for i, (a, b) in enumerate(zip(inputs_before, inputs)):
                if (
                    isinstance(a, torch.Tensor)
                    and not torch.equal(a, b)
                    and not (
                        a.is_floating_point()
                        and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))
                    )
                ):
                    raise Rejected(
                        f"forward wrote into input {i}; the problem does not allow in-place updates"
                    )
        after = state_checksums(self.model)
        changed = [k for k, v in state_before.items() if after.get(k) != v]
        if not self.job.get("buffers_mutate"):
            if changed:
                raise Rejected(f"forward changed model state: {', '.join(changed[:5])}")
        elif any(k.startswith("param:") for k in changed):
            raise Rejected(
                f"forward changed parameters: {', '.join(k for k in changed if k.startswith('param:'))}"
            )
        return snapshot

    def correctness(self) -> None:
        outputs = []
        for k, cpu_inputs in enumerate(self.trials[: int(self.job["trials"])]):
            inputs = [common.to_device(x, self.device) for x in cpu_inputs]
            before = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            state = state_checksums(self.model)
            calls = self.counter.calls
            out = self.call(inputs)
            snap = self.vet_output(out, before, inputs, state)
            self.check_carve_out(f"correctness trial {k}")
            outputs.append(
                {
                    "trial": k,
                    "out": snap.cpu(),
                    "stride": list(out.stride()),
                    "kernel_calls": self.counter.calls - calls,
                }
            )
            self.check_guards(f"correctness trial {k}")
            if k == 0 and self.job.get("mutated_buffers"):
                # what the forward left in the buffers the reference's forward updates (the
                # judge compares them with the reference's after its first trial)
                self.save(
                    {
                        name: _clone(_to_cpu(_detach(value)))
                        for name, value in self.model.named_buffers()
                        if value.numel() <= MAX_BUFFER_ELEMENTS
                    },
                    "buffers.pt",
                )
        self.save(outputs, "correctness.pt")

    def flush(self) -> None:
        # On a GPU: touches every byte of a buffer larger than its L2 (bound: see _add_). The
        # CPU device flushes nothing: a flush in this process is CPU time a candidate could
        # spend on its own work (runtime/lockstep.py), and its inputs arrive cold anyway.
        if self.flush_buf is not None:
            _add_(self.flush_buf, 1)

    def time_one(self, fn, inputs: list[Any]) -> tuple[float, float | None, torch.Tensor]:
        # No garbage collection inside the clock: the two workers allocate differently
        # between calls (the candidate's guards build large snapshots), and a collection that
        # lands in one worker's timed call charges it for the harness's own garbage.
        collecting = _gc_isenabled()
        _gc_disable()
        try:
            return self._time_one(fn, inputs)
        finally:
            if collecting:
                _gc_enable()

    def _time_one(self, fn, inputs: list[Any]) -> tuple[float, float | None, torch.Tensor]:
        """The call alone (the flush before it is a step of its own)."""
        self.sync()
        if self.device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = _perf()
            start.record()
            with torch.no_grad():
                out = fn(*inputs)
            end.record()
            torch.cuda.synchronize()  # device-wide: work on side streams is included in host time
            host = (_perf() - t0) * 1e3
            return host, start.elapsed_time(end), out
        c0, t0 = _cpu_ns(), _perf()
        with torch.no_grad():
            out = fn(*inputs)
        took = (_perf() - t0) * 1e3
        self.last_cpu_ms = (_cpu_ns() - c0) / 1e6
        return took, None, out

    def timing(self) -> None:
        """Time one contender: the candidate (``eval``) or the eager baseline and, when asked,
        the compiled one (``baseline``: a worker that never holds a candidate). Each timed
        call r runs on the inputs of seed r, which the engine drew from OS randomness for this
        evaluation only and hands over when call r is due (no earlier evaluation, no cache, and
        no search of this process's memory at import finds it in advance); on the CPU device
        the baseline's worker draws them and the engine writes them into the input buffers
        here, and reads the output out, itself. The engine times each call on its own clock;
        the times taken here are reports, checked against it. The candidate's output of EVERY
        timed call is written for the judge, which compares it with the baseline worker's
        output on the same inputs, and its digest with the one the engine holds."""
        cfg = self.job["timing"]
        self.flush_buf = self._flush_buffer()
        if self.job["mode"] == "baseline":
            contenders = {"base": self.baseline}
            if self.compiled is not None:
                contenders["compiled"] = self.compiled
        else:
            contenders = {"cand": self.model}
        # the warm sets are held to the end: freed here, they would change the heap
        # (steady_heap) the timed calls allocate from
        buffers, stores, _warm_sets = self._warm_up(contenders, cfg)
        # The contenders the engine orders here: what a baseline's worker could not make (a
        # compiled baseline that failed) is answered "none".
        ordered = (
            ["cand"]
            if "cand" in contenders
            else ["base"] + ["compiled"] * bool(cfg.get("compile_baseline"))
        )
        times = Times(contenders)
        state = state_checksums(self.model) if "cand" in contenders else {}
        moved = self.device.type == "cpu"  # the engine moves inputs and outputs (lockstep)
        staging: list[Any] = []  # the baseline's worker draws each call's inputs here (CPU)
        layout = None
        if moved:
            layout = {"inputs": _spans(buffers)}
            if "cand" not in contenders:
                staging = [_clone(x) if isinstance(x, torch.Tensor) else x for x in buffers]
                layout["staging"] = _spans(staging)
        self._enter_lockstep(contenders, layout)
        calls = int(cfg["reps"]) * len(ordered)
        if moved:
            self._serve_moved(calls, contenders, buffers, staging, times)
        else:
            self._serve_in_steps(calls, contenders, buffers, stores, times)
        if "cand" in contenders:
            self._after_timing(state, times, saved=not moved)
        self.result["timing"] = times.report()

    def _serve_moved(
        self,
        calls: int,
        contenders: dict[str, Any],
        buffers: list[Any],
        staging: list[Any],
        times: Times,
    ) -> None:
        """The CPU device: the engine writes each call's inputs into ``buffers`` and reads its
        output out of this process itself (runtime/lockstep.py); between its calls this
        process does nothing (no copy, no check: it sleeps until the next order, and checks
        once after the last). The baseline's worker also draws each call's inputs into
        ``staging`` when told."""
        # A call is four windows the engine clocks end to end (runtime/lockstep.py): the
        # order (the last output let go), a ping, the call alone between "go" and "done",
        # and its output described. Garbage collection stays off and no_grad on for the whole loop;
        # what a call measured is recorded after the last.
        held = None  # the last call's output, alive until the engine has read it
        recv, send = self.ends.sock.recv, self.ends.sock.sendall
        measured: list[tuple[str, float, float, int]] = []
        collecting = _gc_isenabled()
        _gc_disable()
        try:
            with torch.no_grad():
                while True:  # (after the timed calls, more until "settle": see below)
                    line = self.ends.receive()
                    if line == lockstep.SETTLE:
                        break
                    r, who, seed = lockstep.parse_order(line)
                    held = None  # (read by now: the engine reads an output before its next order)
                    if who == lockstep.DRAW:  # (the baseline's worker, before any call)
                        fresh = common.make_inputs(
                            self.reference,
                            seed,
                            self.device,
                            common.timed_variant(self.job, seed),
                        )
                        _load(staging, fresh)
                        del fresh
                        self.ends.send(f"{lockstep.DRAWN} {r}")
                        continue
                    # Past the timed calls, the engine may order more of the candidate's
                    # calls, the same way, untimed: calls in which the kernel samples where
                    # its threads run (the engine's evidence of its own kernels,
                    # code_samples.py), where the timed calls were too short to show it.
                    timed, calls = calls > 0, calls - 1
                    if who not in contenders:  # (a compiled baseline that could not be made)
                        self.ends.report_done(r, who, "none")
                        continue
                    fn, before = contenders[who], self.counter.calls
                    self.ends.send(f"{r} {who} {lockstep.ARMED}")
                    # (from here to "done", a message read and one written around the call,
                    # as lean as a ping's: the engine's one-line messages arrive whole)
                    got = recv(_LINE)
                    while got == _PING:
                        send(_PONG)
                        got = recv(_LINE)
                    if got != _GO:
                        raise ValueError(f"{got!r} from the engine where 'go' was due")
                    t0 = _perf()  # (the worker's own clock, a report: the thread's CPU
                    out = fn(*buffers)  # clock is a system call, more glue than a ping's)
                    t1 = _perf()
                    send(_DONE)
                    self.ends.await_step(lockstep.DESCRIBE)
                    if type(out) is not torch.Tensor or out.device.type != "cpu":
                        raise Rejected(
                            "a timed call returned something other than a plain torch.Tensor"
                        )
                    self.ends.send(f"{r} {who} {lockstep.OUT} {lockstep.describe_output(out)}")
                    held = out
                    took = (t1 - t0) * 1e3
                    if timed:
                        measured.append((who, took, took, self.counter.calls - before))
                    del out
        finally:
            if collecting:
                _gc_enable()
        for who, took, cpu, kernel_calls in measured:
            times.add(who, took, None, cpu)
            if who == "cand":
                times.calls_per.append(kernel_calls)
        del held  # (the engine has read the last output: it said "settle")
        self.check_threads("after the timed calls")
        self.check_guards("after the timed calls")

    def _serve_in_steps(
        self,
        calls: int,
        contenders: dict[str, Any],
        buffers: list[Any],
        stores: dict[str, torch.Tensor | None],
        times: Times,
    ) -> None:
        """On a GPU: each timed call in four steps the engine orders and clocks apart (the
        inputs, the flush, the call, the output kept and its digest sent), then its checks."""
        while calls:
            r, who, seed = self.ends.next_order()
            calls -= 1
            if who not in contenders:  # (a compiled baseline that could not be made)
                self.ends.report_done(r, who, "none")
                self.ends.await_settle()
                self.ends.send(lockstep.SETTLED)
                continue
            before = self.counter.calls
            fresh = common.make_inputs(
                self.reference, seed, self.device, common.timed_variant(self.job, seed)
            )
            _load(buffers, fresh)
            del fresh
            self.ends.report_done(r, who, lockstep.INPUTS)
            self.ends.await_step(lockstep.FLUSH)
            self.flush()
            self.sync()
            self.ends.send(lockstep.FLUSHED)
            self.ends.await_step(lockstep.CALL)
            h, d, out = self.time_one(contenders[who], buffers)
            self.ends.send(lockstep.CALLED)
            self.ends.await_step(lockstep.KEEP)
            if type(out) is not torch.Tensor:
                raise Rejected("a timed call returned something other than a plain torch.Tensor")
            kept = _keep(stores[who], r, out)
            self.ends.report_done(r, who, _digest(kept))
            self.ends.await_settle()
            self._after_timed_call(r, who, times, (h, d), kept, out, before)
            del out
            self.ends.send(lockstep.SETTLED)

    def _flush_buffer(self) -> torch.Tensor | None:
        """On a GPU, a buffer larger than its L2, flushed before each timed call (None: the
        CPU device flushes nothing)."""
        if self.device.type != "cuda":
            self.result["info"]["steady_heap"] = steady_heap.steady()
            return None
        flush_bytes = (self.result["info"].get("l2_bytes") or 0) * 2 or (
            2 * cpu_caches.largest_cache_bytes()
        )
        return torch.empty(flush_bytes // 4, dtype=torch.int32, device=self.device)

    def _warm_up(
        self, contenders: dict[str, Any], cfg: dict[str, Any]
    ) -> tuple[list[Any], dict[str, torch.Tensor | None], list[list[Any]]]:
        """The warm-up calls on the trials' inputs. Returns the input buffers every timed call
        reads, per contender the room its timed outputs are copied into, and the warm sets."""
        trials = int(self.job["trials"])
        warm_sets = [[common.to_device(x, self.device) for x in t] for t in self.trials[:trials]]
        # One set of input buffers: every timed call reads fresh values at the same addresses.
        buffers = [_clone(x) if isinstance(x, torch.Tensor) else x for x in warm_sets[0]]
        warm_out = None
        for i in range(int(cfg["warmup"])):
            _load(buffers, warm_sets[i % len(warm_sets)])
            for fn in contenders.values():
                self.flush()
                warm_out = self.time_one(fn, buffers)[2]
        # Every timed output is copied into room made before the first timed call, in both
        # workers (with a fresh copy allocated after each call, the later calls of the same
        # program ran ~2x slower in the candidate's worker than in the baseline's).
        # (not on the CPU device: the engine reads each output out of this process itself)
        cpu = self.device.type == "cpu"
        stores = {who: None if cpu else _room(warm_out, int(cfg["reps"])) for who in contenders}
        return buffers, stores, warm_sets

    def _enter_lockstep(
        self, contenders: dict[str, Any], layout: dict[str, list[list[int]]] | None
    ) -> None:
        """Ready for the engine's orders: the checks' baselines taken, then READY sent (with
        the input buffers' layout where the engine moves the inputs: the CPU device)."""
        if self.device.type == "cpu" and self.native_threads is None:  # (the baseline's)
            self.native_threads = _native_threads()
        if "cand" not in contenders:
            # The baseline's worker runs the candidate's checks after each timed call too
            # (they find nothing here): both spend the same CPU between calls, so the
            # scheduler treats the two alike when the machine is busy.
            self.functions, self.flags = snapshot_functions(), snapshot_flags()
            self.threads_before = {t.ident for t in _enumerate_threads()}
        # Lock-step with the other worker (see autocomp_cuda/lockstep.py): the engine orders
        # each call when it is due, with its seed, in four steps it clocks apart (the inputs,
        # the flush, the call, the output kept and its digest sent), from each order to its
        # answer; the same code in both workers. The checks come after them.
        if self.device.type == "cpu":
            # No new process or thread from here on (the hard limit cannot be raised again
            # without privileges): the engine counts the CPU of every process in the sandbox,
            # and one started and ended inside a timed call would escape it. The engine reads
            # this limit from outside before the first call.
            _setrlimit(resource.RLIMIT_NPROC, (0, 0))
            # Nor any thread of the harness's: the phase's watchdog thread ends here (the
            # engine's deadline ends a worker that hangs in lock-step), so the engine, which
            # counts each sandbox's threads from outside, finds the worker's main thread alone
            # (a candidate could otherwise stop the watchdog and put a thread of its own in its
            # place, keeping the count).
            faulthandler.cancel_dump_traceback_later()
            for _ in range(100):  # (its thread may be listed a moment after it was told to end)
                if not self.watchdog_threads & _native_threads():
                    break
                _sleep(0.001)
            self.watchdog_threads = set()
        self.ends.send(lockstep.READY + (f" {json.dumps(layout)}" if layout is not None else ""))

    def _after_timed_call(
        self,
        r: int,
        who: str,
        times: Times,
        clocks: tuple[float, float | None],
        kept: torch.Tensor,
        out: torch.Tensor,
        calls_before: int,
    ) -> None:
        """Out of the window: nothing replaced, no thread left running, the same thread count
        (in the baseline's worker too, so both spend alike between calls); then recorded."""
        self.check_guards(f"timed call {r + 1}")
        self.check_threads(f"after timed call {r + 1}")
        self.check_carve_out(f"timed call {r + 1}")
        times.add(who, *clocks, self.last_cpu_ms)
        if who == "cand":
            times.calls_per.append(self.counter.calls - calls_before)
            times.outputs.append({"set": r, "rep": r, "out": kept, "stride": list(out.stride())})
        elif who == "base":  # the reference for this call's inputs
            torch.save({"expected": _clone(kept)}, self.timed_refs / f"trial_{r}.pt")

    def _after_timing(self, state: dict[str, list[float]], times: Times, saved: bool) -> None:
        """The candidate's state as before timing (unless its forward may update buffers), the
        guards intact; its timed outputs written for the judge (``saved``: on the CPU device
        the engine wrote them, as it read them)."""
        after = state_checksums(self.model)
        changed = [k for k, v in state.items() if after.get(k) != v]
        if changed and not self.job.get("buffers_mutate"):
            raise Rejected(f"model state changed during timing: {', '.join(changed[:5])}")
        self.check_guards("after timing")
        if saved:
            self.save(times.outputs, "timed_samples.pt")

    def run(self) -> int:
        try:
            self.phase("setup")
            self.setup()
            if self.job["mode"] == "compile":  # the compiled baseline's cache, and no candidate
                return self.finish()
            if self.job["mode"] == "baseline":  # the baselines timed, and no candidate
                self.phase("timing")
                self.timed_refs = self.work / "timed_refs"
                self.timed_refs.mkdir(exist_ok=True)
                self.model = self.baseline
                self.timing()
                return self.finish()
            self.phase("load")
            self.load_candidate()
            if self.job["mode"] == "eval":
                self.phase("correctness")
                self.correctness()
                if self.job.get("timing"):
                    self.phase("timing")
                    self.timing()
            faulthandler.cancel_dump_traceback_later()
            self.result["custom_code"] = self.counter.has_custom_code
            self.result["extensions"] = self.counter.extensions
        except Rejected as exc:
            self.result.update(status=common.HACK, message=str(exc))
        except Failed as exc:
            self.result.update(status=exc.status, message=exc.message, detail=exc.detail)
        except Exception as exc:
            default = (
                common.LOAD_ERROR
                if self.result["phase"] in ("setup", "load")
                else common.RUNTIME_ERROR
            )
            self.result.update(
                status=common.classify_exception(exc, default),
                message=f"{type(exc).__name__}: {exc}",
                detail=common.short_traceback(exc),
            )
        return self.finish()

    def finish(self) -> int:
        faulthandler.cancel_dump_traceback_later()
        self.end_phase()
        common.write_json(self.work / "result.json", self.result)
        return 0


class Times:
    """What the timed calls measured, per contender (cand, base, compiled), as reported to the
    engine: each call's host, device-event and CPU time, and the candidate's outputs."""

    def __init__(self, contenders: dict[str, Any]) -> None:
        self.host: dict[str, list] = {who: [] for who in contenders}
        self.dev: dict[str, list] = {who: [] for who in contenders}
        self.cpu: dict[str, list] = {who: [] for who in contenders}
        self.outputs: list[dict[str, Any]] = []
        self.calls_per: list[int] = []  # the candidate's own kernels' calls in each timed call

    def add(self, who: str, host: float, dev: float | None, cpu: float | None) -> None:
        self.host[who].append(host)
        self.dev[who].append(dev)
        self.cpu[who].append(cpu)

    def report(self) -> dict[str, list]:
        return {
            "candidate_host_ms": self.host.get("cand", []),
            "candidate_event_ms": self.dev.get("cand", []),
            "baseline_host_ms": self.host.get("base", []),
            "baseline_event_ms": self.dev.get("base", []),
            "compiled_host_ms": self.host.get("compiled", []),
            "compiled_event_ms": self.dev.get("compiled", []),
            # CPU device: the worker's own clock of each call (its wall clock, a report: the
            # engine's CPU measure of the call's window, less a ping, is the candidate's time)
            "candidate_cpu_ms": self.cpu.get("cand", []),
            "baseline_cpu_ms": self.cpu.get("base", []),
            "compiled_cpu_ms": self.cpu.get("compiled", []),
            "kernel_calls_per_timed_call": self.calls_per,
        }


def _load(buffers: list[Any], values: list[Any]) -> None:
    """Fresh values into the input buffers (bound copy: see _add_)."""
    for buf, src in zip(buffers, values):
        if isinstance(buf, torch.Tensor):
            _copy_(buf, src)


def _spans(buffers: list[Any]) -> list[list[int]]:
    """[address, bytes] of the elements of each tensor buffer on the host: where the engine
    writes a timed call's inputs (the staging buffers, clones of the same tensors, have the
    same strides)."""
    spans = []
    for buf in buffers:
        if isinstance(buf, torch.Tensor):
            extent = (
                1 + sum((n - 1) * s for n, s in zip(buf.shape, buf.stride())) if buf.numel() else 0
            )
            spans.append([buf.data_ptr(), extent * buf.element_size()])
    return spans


def _room(example: Any, reps: int) -> torch.Tensor | None:
    """Room on the host for ``reps`` outputs shaped like ``example`` (None: not a tensor),
    every page touched now: the first write to an untouched page faults, which cost ~0.9 ms
    per MiB of output inside each timed call's window."""
    if type(example) is not torch.Tensor:
        return None
    return torch.zeros((reps, *example.shape), dtype=example.dtype, device="cpu")


def _keep(store: torch.Tensor | None, r: int, out: torch.Tensor) -> torch.Tensor:
    """Output r copied out of the candidate's hands: into ``store[r]`` where it fits."""
    if store is not None and out.shape == store.shape[1:] and out.dtype == store.dtype:
        _copy_(store[r], _detach(out))
        return store[r]
    return _clone(_to_cpu(_detach(out)))


def _native_threads() -> set[str]:
    """The ids of this process's threads as the kernel lists them (C++ threads included)."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


def warm_up() -> None:
    """Before the candidate arrives (its imports are done at the module's), create the CUDA
    context; none of this is the candidate's work. Never at import: a preload server must
    not hold a context its forks would share."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") and torch.cuda.is_available():
        torch.cuda.init()


def wait_for_job(job_path: Path, idle_s: float) -> bool:
    """Standby: tell the engine we are ready, then wait for the job file to appear."""
    warm_up()
    (job_path.parent / "ready").write_text("")
    deadline = _perf() + idle_s
    while not job_path.exists():
        if _perf() > deadline:
            return False
        _sleep(0.005)
    return True


def main(job_path: str, wait_s: float | None = None) -> int:
    faulthandler.enable()
    if wait_s is not None and not wait_for_job(Path(job_path), wait_s):
        os._exit(0)  # nobody came: leave quietly, the engine starts a new worker when needed
    job = json.loads(Path(job_path).read_text())
    # Gone from the disk before any candidate code runs (the timed calls' seeds are not in it:
    # the engine hands each over when its call is due).
    Path(job_path).unlink(missing_ok=True)
    received = time.time()  # against the engine's clock: how long the job waited for this process
    if job.get("build_dir"):
        os.environ["TORCH_EXTENSIONS_DIR"] = job["build_dir"]
    worker = Worker(job)
    worker.result["job_received"] = received
    code = worker.run()
    sys.stdout.flush()
    # Skip interpreter teardown: a candidate's atexit hooks and stray threads get no say.
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[3]) if sys.argv[2:3] == ["--wait"] else None)
