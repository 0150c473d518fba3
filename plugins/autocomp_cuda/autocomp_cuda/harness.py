"""The evaluation pipeline, run from the engine's process.

    static AST rules ─► reference outputs (own process, cached per problem+seed)
                    ─► build (own process, parallel on CPU cores, content-hashed cache)
                    ─► load / correctness / timing (own sandboxed process, one per device slot)
                    ─► comparison against the float64 reference (the judge: a trusted process
                       per device slot, kept) ─► roofline, verdict (here)

Every candidate child runs through ``autocomp_core.sandbox.run_sandboxed`` in a private work
dir that holds only what it needs: the candidate never sees reference outputs. Each
candidate gets its own process, which ends with it: a watchdog, a CUDA fault or an
allocation failure takes nothing else down. The next candidate's process is started ahead
of need (``workers.Worker``), so it finds torch already imported. This process never
imports torch: tensors are only touched by the children and the judge.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import random
import secrets
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocomp_core import (
    PreloadServer,
    SandboxLimits,
    SandboxResult,
    private_workdir,
    run_sandboxed,
)
from filelock import AsyncFileLock

from . import cache, compiler_feedback, input_plan, lockstep, proc_clock, static_check
from .judge import Judge, JudgeError
from .problemset import HELD_COPIES, TINY_BUDGET, ProblemSpec
from .statuses import CUDA_FAULT_MARKERS, OOM_MARKERS, STATUSES  # noqa: F401 - STATUSES is public here
from .workers import CANDIDATE_MAIN, REFERENCE_MAIN, ReferenceServer, Worker

#: The share of the baseline's timed windows during which the candidate's sandbox used a CPU
#: above which the verdict says so: a waiting worker uses next to none (about 0.001 here,
#: though honest ones reached 0.4 at load 14); a process kept spinning beside them about 1 on
#: an idle machine, and 0.2 at load 9 on two cores.
BUSY_BESIDE_BASELINE = 0.03
#: Bumped when the reference files change layout (older cached references are not read).
#: 6: the buffers a forward updates, after trial 0 (buffers_0.pt); constant weights re-drawn
#: for every problem; 7: a shrunk batch stays at 2 where other sizes can shrink instead
REFERENCE_FORMAT = 7
#: A Triton cache larger than this is not kept (a normal one holds a few MB).
KEEP_TREE_MAX_BYTES = 256 * 2**20
#: How every worker runs Inductor (the compiled baseline's compiler). It precompiles its C++
#: headers (several CPU-seconds) before it loads even a cached kernel, into a folder of the
#: worker's own: each candidate's worker paid that again for the compiled baseline that was
#: copied to it ready-made. (Part of that cache's key: the headers change the kernels' keys.)
INDUCTOR_ENV = {"TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS": "0"}
USES_EXTENSION = ("load_inline", "cpp_extension")


@dataclass
class Settings:
    device: str = "cpu"  # "cpu" or "cuda"
    size: str = "tiny"  # "tiny" or "full"
    trials: int = 5
    warmup: int = 3
    # Timed calls, every one checked against the baseline's output. 40: at 20, an honest 1.5x
    # on the CPU device measured 1.09-1.52x on a busy 2-core machine, at 40 1.38-1.47x, for
    # no evaluation time that shows above the load's noise (benchmarks/cuda_timing_stability.py).
    reps: int = 40
    settle_s: float = 0.02
    compile_timeout_s: float = 600.0
    load_timeout_s: float = 120.0
    correctness_timeout_s: float = 120.0
    timing_timeout_s: float = 300.0
    memory_mb: int | None = 8192
    static_checks: bool = True
    require_custom_kernel: bool = (
        False  # True: a pure-PyTorch ModelNew is refused, not just flagged
    )
    roofline_slack: float = 0.5  # reject below slack x the speed-of-light time
    side_stream_gap_ms: float = 0.1
    peak_gflops: float | None = None
    bandwidth_gbs: float | None = None
    compile_baseline: bool = False  # also time torch.compile(Model), interleaved like the eager one
    warm_workers: bool = True  # keep the next candidate's worker started, torch imported
    #: fork candidate and reference workers from a process that imported torch once
    #: (sandbox.preload) instead of starting each with a fresh interpreter; the sandbox is the
    #: same either way
    preload_workers: bool = True
    worker_slack_s: float = (
        30.0  # beyond the phase watchdogs: startup, writing results; then killed
    )
    standby_idle_s: float = 300.0  # a standby worker nobody used by then leaves on its own
    cache_max_mb: int = 4096  # refs/ and builds/ each pruned to this, least recently used first

    def phase_timeouts(self) -> dict[str, float]:
        return {
            "setup": self.load_timeout_s,
            "load": self.load_timeout_s,
            "correctness": self.correctness_timeout_s,
            "timing": self.timing_timeout_s,
        }


@dataclass
class Verdict:
    """What one evaluation found. ``status`` is one of ``STATUSES``."""

    status: str
    message: str = ""
    detail: str = ""
    candidate_ms: float | None = None
    baseline_ms: float | None = None
    candidate_iqr_ms: float | None = None
    compiled_baseline_ms: float | None = None  # torch.compile(Model), when that baseline is on
    error_ratio: float | None = None
    flags: list[str] = field(default_factory=list)  # reasons to exclude from fast_p
    notes: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    phases_s: dict[str, float] = field(default_factory=dict)  # reference, build, eval: they add up
    #: where the eval phase went: startup (job handed over until the worker began), the
    #: worker's own phases (setup, load, correctness, timing, output_write), the judge's
    #: (judge_load, judge_compare) and the rest (process exit, files)
    breakdown_s: dict[str, float] = field(default_factory=dict)
    build_cache_hit: bool | None = None
    worker_warm: bool | None = None  # the worker had its imports done when the job arrived
    sizes: dict[str, Any] = field(
        default_factory=dict
    )  # module constants overridden ({}: the file's own)
    sizes_auto: bool = False  # chosen by shrinking the problem to the CPU budget
    shapes: dict[str, Any] = field(
        default_factory=dict
    )  # input and output shapes ({}: no reference ran)

    @property
    def speedup(self) -> float | None:
        if self.candidate_ms and self.baseline_ms:
            return self.baseline_ms / self.candidate_ms
        return None

    @property
    def speedup_vs_compiled(self) -> float | None:
        if self.candidate_ms and self.compiled_baseline_ms:
            return self.compiled_baseline_ms / self.candidate_ms
        return None

    @property
    def scored(self) -> bool:
        """Counts toward fast_p: correct and not flagged."""
        return self.status == "ok" and not self.flags

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "message": self.message,
            "candidate_ms": self.candidate_ms,
            "baseline_ms": self.baseline_ms,
            "speedup": self.speedup,
            "candidate_iqr_ms": self.candidate_iqr_ms,
            "compiled_baseline_ms": self.compiled_baseline_ms,
            "speedup_vs_compiled": self.speedup_vs_compiled,
            "error_ratio": self.error_ratio,
            "flags": self.flags,
            "notes": self.notes,
            "info": self.info,
            "phases_s": self.phases_s,
            "breakdown_s": self.breakdown_s,
            "build_cache_hit": self.build_cache_hit,
            "worker_warm": self.worker_warm,
            "sizes": self.sizes,
            "sizes_auto": self.sizes_auto,
            "scored": self.scored,
        }


def describe_sizes(spec: ProblemSpec, sizes: dict[str, Any]) -> str:
    """One line: the sizes a problem was shrunk to, next to the file's own."""
    if not sizes:
        return "sizes: the file's own (they fit the CPU budget)"
    shown = ", ".join(f"{k}={v} (file: {spec.constants.get(k, '?')})" for k, v in sizes.items())
    return f"sizes shrunk automatically to fit the CPU: {shown}"


def checksums_match(ours: Any, theirs: Any) -> bool:
    """Input checksums from two processes agree. Float64 sums of one tensor differ in their
    last bits when the processes sum in another order (another thread count: a gate run with
    ``--jobs``); inputs drawn differently differ in every digit."""
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(map(checksums_match, ours, theirs))
    if isinstance(ours, float) and isinstance(theirs, float):
        return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)
    return ours == theirs


def timed_seeds(reps: int) -> list[int]:
    """The timed calls' input seeds: drawn from OS randomness for each evaluation, so neither
    the candidate (from the evaluation seed or ``torch.initial_seed()``) nor any cache kept by
    an earlier evaluation can know them in advance."""
    return [secrets.randbits(31) for _ in range(reps)]


#: A timed call's output is compared with the eager baseline's float32 output on the same
#: inputs, not with the float64 reference: the baseline's own rounding error (at most half the
#: tolerance where the gate passed the problem) is allowed for on top of the candidate's.
TIMED_TOLERANCE_FACTOR = 2.0


def trial_seeds(seed: int, trials: int) -> list[int]:
    rng = random.Random(seed * 7919 + 17)
    return [rng.getrandbits(31) for _ in range(trials)]


def _median_iqr(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    if len(values) < 4:
        return statistics.median(values), 0.0
    q = statistics.quantiles(values, n=4)
    return statistics.median(values), q[2] - q[0]


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    for base, dirs, names in os.walk(root):
        os.chown(base, uid, gid)
        for name in (*dirs, *names):
            os.lchown(os.path.join(base, name), uid, gid)


def _take_ownership(root: Path) -> None:
    """Files a sandboxed child wrote belong to a throw-away uid; make them ours again."""
    if os.geteuid() == 0:
        _chown_tree(root, 0, 0)


def _clock_socket(work: Path) -> lockstep.EngineEnds:
    """The timing socket of a started worker, owned as its dir is (the sandbox's uid)."""
    owner = work.stat()
    mine = (owner.st_uid, owner.st_gid) == (os.geteuid(), os.getegid())
    return lockstep.EngineEnds(work, None if mine else (owner.st_uid, owner.st_gid))


def _give_to_worker(root: Path, work: Path) -> None:
    """Files put into a started worker's dir belong to whoever owns the dir (the sandbox's
    per-run uid), so the worker may write them (caches it adds to) as its own."""
    owner = work.stat()
    if (owner.st_uid, owner.st_gid) != (os.geteuid(), os.getegid()):
        _chown_tree(root, owner.st_uid, owner.st_gid)


class ProblemRefused(RuntimeError):
    """The problem cannot run here (not the candidate's fault); the message is one line.
    ``reason``: cannot_shrink, too_big, import_error or reference_too_slow."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class Harness:
    def __init__(
        self,
        cache_dir: Path,
        settings: Settings,
        gpu_ids: list[int] | None = None,
        compile_workers: int | None = None,
    ):
        self.cache = Path(cache_dir)
        self.settings = settings
        for folder in ("refs", "builds", "triton", "inductor"):
            (self.cache / folder).mkdir(parents=True, exist_ok=True)
            cache.remove_orphans(self.cache / folder)  # left by a process that crashed
        (self.cache / "locks").mkdir(parents=True, exist_ok=True)
        # Reference outputs are the answers: no sandboxed child may read them. Each is shown
        # the cache as an empty dir where the sandbox has namespaces; this keeps a per-run
        # uid out where it has not.
        (self.cache / "refs").chmod(0o700)
        self.salt = cache.salt(self.cache)
        self._hidden = [self.cache, *cache.usual_roots()]
        self._ref_locks: dict[str, asyncio.Lock] = {}
        self._build_locks: dict[str, asyncio.Lock] = {}
        self._compile_slots = asyncio.Semaphore(compile_workers or max(1, os.cpu_count() or 1))
        # reference children (each imports torch and runs on every core): one per core at a
        # time, however many problems are checked at once
        self._reference_slots = asyncio.Semaphore(max(1, os.cpu_count() or 1))
        # One evaluation slot per GPU (timing is serialized per device); one for the CPU.
        self._gpu_ids = list(gpu_ids or [0]) if settings.device == "cuda" else [None]
        self._free_devices: asyncio.Queue | None = None
        self._standby: dict[int | None, Worker] = {}  # per device slot
        self._ref_servers: list[ReferenceServer] = []  # idle reference workers, kept
        self._judges = {gpu: Judge.shared(self._judge_env(gpu)) for gpu in self._gpu_ids}
        self._bytes_moved: dict[str, int] = {}  # per problem id, from its last reference
        self._uncompiled: set[str] = set()  # compiled-baseline keys whose compile failed

    @property
    def device_slots(self) -> int:
        """Evaluations that can time at once: one per GPU, one on the CPU device."""
        return len(self._gpu_ids)

    # ------------------------------------------------------------------ child processes
    def _env(self, gpu: int | None) -> dict[str, str]:
        env = {
            "PYTHONDONTWRITEBYTECODE": "1",
            "MAX_JOBS": str(max(1, os.cpu_count() or 1)),
            "PYTHONPATH": _import_path(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(max(1, os.cpu_count() or 1))),
            **INDUCTOR_ENV,
        }
        if self.settings.device == "cpu":
            env["TRITON_INTERPRET"] = "1"  # Triton kernels run on CPU tensors for real checks
            env["CUDA_VISIBLE_DEVICES"] = ""
        else:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu if gpu is not None else 0)
            if os.environ.get("CUDA_HOME"):
                env["CUDA_HOME"] = os.environ["CUDA_HOME"]
        for key in ("TORCH_CUDA_ARCH_LIST", "CC", "CXX", "LD_LIBRARY_PATH"):
            if os.environ.get(key):
                env[key] = os.environ[key]
        return env

    def _judge_env(self, gpu: int | None) -> dict[str, str]:
        """The judge is ours (not sandboxed), but it still gets only what it needs."""
        env = {
            key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ
        }
        return {**env, **self._env(gpu)}

    def _limits(self, wall_s: float) -> SandboxLimits:
        return SandboxLimits(
            wall_s=wall_s,
            memory_mb=self.settings.memory_mb if self.settings.device == "cpu" else None,
            file_size_mb=4096,
            max_processes=512,
            max_output_bytes=2_000_000,
        )

    async def _run_child(
        self, module: str, job: dict[str, Any], work: Path, wall_s: float
    ) -> SandboxResult:
        (work / "job.json").write_text(json.dumps(job))
        return await run_sandboxed(
            [sys.executable, "-m", f"autocomp_cuda.runtime.{module}", str(work / "job.json")],
            limits=self._limits(wall_s),
            cwd=work,
            env=self._env(None),
            hidden=self._hidden,
            preload=self._preload(None),
        )

    def _preload(self, gpu: int | None) -> PreloadServer | None:
        """The server the workers of this device slot (candidates' and references') are forked
        from, torch imported."""
        if not self.settings.preload_workers:
            return None
        return PreloadServer.shared([CANDIDATE_MAIN, REFERENCE_MAIN], self._env(gpu))

    def _eval_deadline_s(self) -> float:
        # timing twice: a timed worker's calls alternate with the other worker's
        s = self.settings
        return sum(s.phase_timeouts().values()) + s.timing_timeout_s + s.worker_slack_s

    def _start_worker(self, gpu: int | None) -> Worker:
        return Worker(
            self._env(gpu),
            self._limits(self._eval_deadline_s()),
            self.settings.standby_idle_s,
            hidden=self._hidden,
            preload=self._preload(gpu),
        )

    async def _take_worker(self, gpu: int | None) -> Worker:
        """The slot's standby worker if it can still take a job, else a new one."""
        worker = self._standby.pop(gpu, None)
        if worker is not None:
            if worker.usable():
                return worker
            if worker.loop is asyncio.get_running_loop():
                await worker.close()
        return self._start_worker(gpu)

    async def warm_up(self, timeout_s: float = 120.0) -> bool:
        """Start a standby worker on every device slot and wait until each has its imports
        done. Evaluations do this by themselves; call it to have the first one warm too."""
        for gpu in self._gpu_ids:
            self._judges[gpu].start()
            self._standby[gpu] = await self._take_worker(gpu)
        ready = await asyncio.gather(*(w.wait_ready(timeout_s) for w in self._standby.values()))
        return all(ready)

    async def aclose(self) -> None:
        """Stop the standby workers (an event loop that ends cancels them too). The judges are
        shared by the harnesses of this process: they leave when idle or when it exits."""
        workers, self._standby = [*self._standby.values(), *self._ref_servers], {}
        self._ref_servers = []
        for worker in workers:
            if worker.loop is asyncio.get_running_loop():
                await worker.close()

    # ------------------------------------------------------------------ reference
    def _shrinks(self, spec: ProblemSpec) -> bool:
        """A problem with no tiny sizes of its own (an imported one) is shrunk to fit the CPU."""
        return self.settings.size == "tiny" and not spec.tiny

    def _ref_key(self, spec: ProblemSpec, seed: int) -> str:
        s = self.settings
        text = json.dumps(
            [
                spec.digest,
                s.size,
                s.device,
                seed,
                s.trials,
                spec.atol,
                spec.rtol,
                _torch_tag(),
                REFERENCE_FORMAT,
                spec.tiny,
                TINY_BUDGET if self._shrinks(spec) else None,
                spec.off_distribution,
            ]
        )
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    async def reference(
        self,
        spec: ProblemSpec,
        seed: int,
        gate: bool = False,
        sizes: dict[str, Any] | None = None,
    ) -> tuple[Path, dict[str, Any]]:
        """Reference outputs for (problem, seed): computed once in their own process, then cached.
        The sizes they were computed at (``meta["sizes"]``) are the sizes every candidate runs at.
        Raises ``ProblemRefused`` for a problem that cannot run here (one line saying why).
        ``sizes``: at these module-constant overrides instead (a shape of the problem's family)."""
        base = self._ref_key(spec, seed) + (
            ""
            if sizes is None
            else "-" + hashlib.sha256(json.dumps(sizes).encode()).hexdigest()[:8]
        )
        key = base + ("-gate" if gate else "")
        lock = self._ref_locks.setdefault(base, asyncio.Lock())
        async with lock, self._shared_lock(f"ref-{base}"):
            for found in (
                [key] if gate else [key, base + "-gate"]
            ):  # the gate's references hold the same
                meta_path = self.cache / "refs" / found / "meta.json"
                if meta_path.exists():
                    cache.touch(meta_path.parent)
                    meta = json.loads(meta_path.read_text())
                    if meta.get("status") == "refused":
                        raise ProblemRefused(meta["error"], meta["reason"])
                    return meta_path.parent, meta
            target = self.cache / "refs" / key
            job = {
                "problem": {
                    "overrides": spec.sizes(self.settings.size) if sizes is None else sizes,
                    "id": spec.id,
                },
                "shrink": TINY_BUDGET if self._shrinks(spec) and sizes is None else None,
                "held_copies": HELD_COPIES,
                "device": self.settings.device,
                "init_seed": seed,
                "trial_seeds": trial_seeds(seed, self.settings.trials),
                "trials": self.settings.trials,
                "atol": spec.atol,
                "rtol": spec.rtol,
                "gate": gate,
                **self._off_distribution(spec, seed),
            }
            wall_s = self.settings.correctness_timeout_s * (3 if gate else 2)
            async with self._reference_slots:
                server, how, stderr = await self._serve_reference(spec, job, wall_s)
            try:
                out = Path(job["out_dir"])
                if not (out / "meta.json").exists():
                    if how == "timeout":
                        raise ProblemRefused(
                            f"the reference took longer than {wall_s:g} s (correctness_timeout_s x "
                            f"{3 if gate else 2})",
                            "reference_too_slow",
                        )
                    raise RuntimeError(
                        f"the reference worker for {spec.id} died ({how}): {stderr[-2000:]}"
                    )
                meta = json.loads((out / "meta.json").read_text())
                if meta.get("status") == "refused":
                    if meta["reason"] == "cannot_shrink":  # the same on every run: remembered
                        _take_ownership(out)
                        _keep_tree(out, target)
                    raise ProblemRefused(meta["error"], meta["reason"])
                if meta.get("status") != "ok":
                    raise RuntimeError(
                        f"reference for {spec.id} failed: {meta.get('error')}\n{meta.get('traceback', '')}"
                    )
                _take_ownership(out)
                cache.publish(out, target)
                cache.prune(self.cache / "refs", self.settings.cache_max_mb << 20)
            finally:
                server.finish()
                await self._keep_server(server, how)
            return target, meta

    async def _take_server(self) -> ReferenceServer:
        while self._ref_servers:
            server = self._ref_servers.pop()
            if server.usable():
                return server
            if server.loop is asyncio.get_running_loop():
                await server.close()
        return self._new_server()

    def _new_server(self) -> ReferenceServer:
        return ReferenceServer(
            self._env(None),
            self._limits(self.settings.correctness_timeout_s * 3),
            self.settings.standby_idle_s,
            hidden=self._hidden,
            preload=self._preload(None),
        )

    async def _keep_server(self, server: ReferenceServer, how: str) -> None:
        """Back to the pool after a job it finished, unless workers are not kept warm."""
        if how == "done" and self.settings.warm_workers and server.usable():
            self._ref_servers.append(server)
        elif server.loop is asyncio.get_running_loop():
            await server.close()

    async def _serve_reference(
        self, spec: ProblemSpec, job: dict[str, Any], wall_s: float
    ) -> tuple[ReferenceServer, str, str]:
        """Run one reference job on a kept server (or a new one). A job that a server which ran
        other problems before did not finish with "ok" (a refusal, an error, a crash; not a
        timeout, which would cost its whole deadline again) runs again on a fresh server, whose
        verdict stands: no verdict depends on what an earlier problem left behind. Fills in
        the job's paths; returns the server that ran it (to ``finish``), how it ended and its
        stderr."""
        server = await self._take_server()
        while True:
            problem_path, out_dir = server.job_paths()
            problem_path.write_text(spec.source)
            job["problem"]["path"], job["out_dir"] = str(problem_path), str(out_dir)
            fresh = server.served == 0
            how, stderr = await server.run(job, wall_s)
            status = (_read_json(out_dir / "meta.json") or {}).get("status")
            if fresh or how == "timeout" or (how == "done" and status == "ok"):
                return server, how, stderr
            server.finish()
            await server.close()  # its process state is suspect: never reused
            server = self._new_server()

    def _shared_lock(self, name: str) -> AsyncFileLock:
        """Held by one of the processes sharing this cache at a time (parallel runs, a test
        suite's workers): a reference or build is made once, the others wait and find it."""
        return AsyncFileLock(self.cache / "locks" / f"{name}.lock")

    # ------------------------------------------------------------------ build
    def build_key(self, code: str) -> str:
        return hashlib.sha256(
            json.dumps([code, self.settings.device, _torch_tag()]).encode()
        ).hexdigest()[:24]

    async def build(self, code: str) -> tuple[Path | None, Verdict | None, bool, str]:
        """Compile the candidate's extensions. Returns (prebuilt dir, failure, cache hit, build log)."""
        if not any(word in code for word in USES_EXTENSION):
            return None, None, False, ""
        key = self.build_key(code)
        target = self.cache / "builds" / key
        lock = self._build_locks.setdefault(key, asyncio.Lock())
        async with lock, self._shared_lock(f"build-{key}"):
            if (target / "built.json").exists():
                cache.touch(target)
                return (
                    target,
                    None,
                    True,
                    (target / "build.log").read_text() if (target / "build.log").exists() else "",
                )
            async with self._compile_slots:
                with private_workdir("autocomp-cuda-build-") as work:
                    (work / "candidate.py").write_text(code)
                    job = self._candidate_job(work, "build", None, None, 0)
                    result = await self._run_child(
                        "candidate_main", job, work, wall_s=self.settings.compile_timeout_s
                    )
                    log = result.stdout + "\n" + result.stderr
                    outcome = _read_json(work / "result.json")
                    if result.timed_out or outcome is None:
                        if result.timed_out:
                            return (
                                None,
                                Verdict(
                                    "timeout",
                                    f"compilation exceeded {self.settings.compile_timeout_s:g} s",
                                    detail=log[-4000:],
                                ),
                                False,
                                log,
                            )
                        return None, _crash_verdict(result, "compile"), False, log
                    if outcome["status"] != "ok":
                        errors = compiler_feedback.locate_errors(log, code, work / "ext")
                        status = (
                            "compile_error"
                            if (errors or "Error building extension" in outcome.get("message", ""))
                            else outcome["status"]
                        )
                        message = outcome.get("message", "")
                        if status == "compile_error":
                            message = "compilation failed:\n" + (
                                "\n".join(errors) or _tail_errors(log)
                            )
                        return (
                            None,
                            Verdict(status, message, detail=outcome.get("detail", "")),
                            False,
                            log,
                        )
                    _take_ownership(work)
                    kept = work / "kept"
                    kept.mkdir()
                    for name, so in outcome.get("built", {}).items():
                        shutil.copy2(so, kept / f"{name}.so")
                    (kept / "build.log").write_text(log[-200_000:])
                    (kept / "built.json").write_text(json.dumps(sorted(outcome.get("built", {}))))
                    cache.publish(kept, target)
                    cache.prune(self.cache / "builds", self.settings.cache_max_mb << 20)
            return target, None, False, log

    def _off_distribution(self, spec: ProblemSpec, seed: int) -> dict[str, Any]:
        """What the reference worker draws off the problem's own distribution: the input
        variant of each trial and whether constant-initialised weights are re-drawn."""
        s = self.settings
        return {
            "input_variants": input_plan.plan(
                trial_seeds(seed, s.trials), s.trials, spec.off_distribution
            ),
            # every problem's, ours too: a LayerNorm's weight 1 and bias 0 pass a program that
            # ignores them (the red team's finding on L3/transformer_block)
            "redraw_constants": True,
        }

    # ------------------------------------------------------------------ evaluation
    def _candidate_job(
        self,
        work: Path,
        mode: str,
        spec: ProblemSpec | None,
        seed: int | None,
        trials: int,
        ref_meta: dict[str, Any] | None = None,
        timed: bool = True,
    ) -> dict[str, Any]:
        """What a candidate worker is asked to do; ``ref_meta``: the reference it is judged
        against (the sizes it ran at, the buffers its forward updates)."""
        s = self.settings
        ref = ref_meta or {}
        job: dict[str, Any] = {
            "mode": mode,
            "work_dir": str(work),
            "candidate": str(work / "candidate.py"),
            "device": "cuda" if s.device == "cuda" else "cpu",
            "settle_s": s.settle_s,
            "build_dir": str(work / "ext"),
            "phase_timeouts": s.phase_timeouts(),
        }
        if mode == "build":
            job["phase_timeouts"] = {"setup": s.compile_timeout_s, "load": s.compile_timeout_s}
        if spec is not None:
            job.update(
                problem={
                    "path": str(work / "problem.py"),
                    "id": spec.id,
                    "overrides": spec.sizes(s.size) if ref.get("sizes") is None else ref["sizes"],
                },
                init_seed=seed,
                trial_seeds=trial_seeds(seed or 0, trials),
                trials=trials,
                in_place=spec.in_place,
                # A candidate may update buffers only where the reference's own forward does
                # (training-mode BatchNorm's running statistics); parameters never.
                buffers_mutate=spec.buffers_mutate or bool(ref.get("mutated_buffers")),
                mutated_buffers=ref.get("mutated_buffers") or [],
                # the variant each trial's inputs were drawn from, as the reference ran them,
                # and those a timed call may draw from (input_plan)
                input_variants=ref.get("input_variants"),
                timed_variants=ref.get("timed_variants"),
                timing={
                    "warmup": s.warmup,
                    "reps": s.reps,
                    "compile_baseline": s.compile_baseline,
                }
                if s.reps > 0 and timed
                else None,
            )
        return job

    async def _device_slot(self):
        if self._free_devices is None:
            self._free_devices = asyncio.Queue()
            for gpu in self._gpu_ids:
                self._free_devices.put_nowait(gpu)
        return await self._free_devices.get()

    async def evaluate(self, spec: ProblemSpec, code: str, seed: int = 0) -> Verdict:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            compile(code, "candidate.py", "exec")
        except SyntaxError as exc:
            return Verdict("compile_error", f"candidate line {exc.lineno}: SyntaxError: {exc.msg}")
        if self.settings.static_checks:
            findings = static_check.check(code)
            if findings:
                return Verdict(
                    "hack_suspected", "refused by static rules:\n" + "\n".join(map(str, findings))
                )
        for judge in self._judges.values():
            judge.start()  # its imports overlap with the reference, the build and the run
        try:
            ref_dir, ref_meta = await self.reference(spec, seed)
        except ProblemRefused as exc:
            return Verdict(
                "infra_error",
                f"the problem cannot run here: {exc}",
                phases_s={"reference": loop.time() - started},
            )
        family = spec.family(self.settings.size)
        if ref_meta.get("second_shape"):  # shrinking made a size 1: also checked at 2
            family.append(ref_meta["second_shape"])
        try:
            family_refs = [await self.reference(spec, seed, sizes=sizes) for sizes in family]
        except ProblemRefused as exc:
            return Verdict(
                "infra_error",
                f"a shape of the problem's family cannot run here: {exc}",
                phases_s={"reference": loop.time() - started},
            )
        t_ref = loop.time()
        shapes = {"inputs": ref_meta.get("input_shapes"), "output": ref_meta["output"]}
        prebuilt, failure, cache_hit, build_log = await self.build(code)
        t_build = loop.time()
        if failure is not None:
            failure.phases_s = {"reference": t_ref - started, "build": t_build - t_ref}
            failure.shapes = shapes
            return failure
        gpu = await self._device_slot()
        breakdown: dict[str, float] = {}
        try:
            verdict, warm = await self._run_worker(
                spec, code, seed, ref_dir, ref_meta, prebuilt, gpu, breakdown
            )
            # Right at the timed shape: then, untimed, at each shape of the declared family.
            for sizes, (family_dir, family_meta) in zip(family, family_refs):
                if verdict.status != "ok":
                    break
                at_shape, _ = await self._run_worker(
                    spec, code, seed, family_dir, family_meta, prebuilt, gpu, {}, timed=False
                )
                verdict.info.setdefault("shapes_checked", []).append(sizes)
                if at_shape.status != "ok":
                    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
                    at_shape.message = f"at the family's shape {shown}: {at_shape.message}"
                    verdict = at_shape
        finally:
            self._free_devices.put_nowait(gpu)
        verdict.worker_warm = warm
        verdict.shapes = shapes
        verdict.sizes, verdict.sizes_auto = (
            dict(ref_meta.get("sizes") or {}),
            bool(ref_meta.get("sizes_auto")),
        )
        if verdict.sizes_auto:
            verdict.notes.insert(0, describe_sizes(spec, verdict.sizes))
        verdict.build_cache_hit = cache_hit if prebuilt is not None else None
        verdict.phases_s = {
            "reference": t_ref - started,
            "build": t_build - t_ref,
            "eval": loop.time() - t_build,
        }
        breakdown["other"] = max(
            0.0,
            verdict.phases_s["eval"]
            - sum(v for k, v in breakdown.items() if not k.startswith("judge_")),
        )
        verdict.breakdown_s = breakdown
        if build_log and self.settings.device == "cuda":
            kernels = compiler_feedback.ptxas_summary(build_log)
            if kernels:
                verdict.notes.append(compiler_feedback.describe_ptxas(kernels))
        return verdict

    async def _run_worker(
        self,
        spec: ProblemSpec,
        code: str,
        seed: int,
        ref_dir: Path,
        ref_meta: dict[str, Any],
        prebuilt: Path | None,
        gpu: int | None,
        breakdown: dict[str, float],
        timed: bool = True,
    ) -> tuple[Verdict, bool]:
        """One candidate worker: load, correctness (and timing, when ``timed``), then the
        judge. Timed, the baselines are timed by a worker of their own, alive beside the
        candidate's and driven in lock-step with it (``lockstep``): call r of each on the same
        inputs (seeds drawn now), one right after the other. The baseline worker's eager
        outputs are what every timed output of the candidate is judged against. Returns the
        verdict and whether the worker was warm."""
        loop = asyncio.get_running_loop()
        s = self.settings
        timed = timed and s.reps > 0
        seeds = timed_seeds(s.reps) if timed else []
        baseline_worker: Worker | None = None
        try:
            baseline_job: dict[str, Any] = {}
            if timed:
                compiled = None
                if s.compile_baseline:
                    compiled = await self._compiled_baseline(spec, seed, ref_dir, ref_meta, gpu)
                # A fresh process (the standby one goes to the candidate): it starts while the
                # candidate loads, long before anything is timed.
                baseline_worker = self._start_worker(gpu)
                baseline_job = self._baseline_job(baseline_worker, spec, seed, ref_dir, ref_meta)
                if compiled is not None:  # a copy: the cache kept stays as it was made
                    work = baseline_worker.work
                    shutil.copytree(compiled, work / "inductor-cache", symlinks=True)
                    _give_to_worker(work / "inductor-cache", work)
                    baseline_job["inductor_cache"] = str(work / "inductor-cache")
            worker = await self._take_worker(gpu)
            warm = worker.ready
            try:
                work = worker.work
                (work / "candidate.py").write_text(code)
                (work / "problem.py").write_text(spec.source)
                shutil.copy2(ref_dir / "init.pt", work / "init.pt")
                job = self._candidate_job(work, "eval", spec, seed, s.trials, ref_meta, timed)
                if timed:  # its timed calls wait for the baseline's in between
                    job["phase_timeouts"]["timing"] = 2 * s.timing_timeout_s
                if prebuilt is not None:
                    shutil.copytree(prebuilt, work / "prebuilt")
                    job["prebuilt"] = str(work / "prebuilt")
                triton_cache = self._triton_cache(code)
                if triton_cache is not None:
                    job["triton_cache"] = str(work / "triton-cache")
                    if triton_cache.exists():
                        shutil.copytree(triton_cache, work / "triton-cache", symlinks=True)
                        _give_to_worker(work / "triton-cache", work)
                self._judges[gpu].start()  # (again: an idle judge leaves, during a long build)
                handed_over = time.time()
                baseline: dict[str, Any] | None = None
                drive: lockstep.Drive | None = None
                if baseline_worker is not None:
                    result, baseline_run, drive, failure = await self._time_in_lockstep(
                        worker, job, baseline_worker, baseline_job, seeds
                    )
                    if failure is not None:
                        return failure, warm
                    baseline = baseline_run.get("timing")
                else:
                    result = await worker.run(job, self._eval_deadline_s())
                t_worker = loop.time()
                timed_refs = baseline_worker.work / "timed_refs" if baseline_worker else None
                verdict = await self._judge(
                    spec,
                    work,
                    result,
                    ref_dir,
                    ref_meta,
                    gpu,
                    breakdown,
                    baseline,
                    timed_refs,
                    drive,
                )
                outcome = _read_json(work / "result.json") or {}
                if outcome.get("job_received"):
                    breakdown["startup"] = max(0.0, outcome["job_received"] - handed_over)
                breakdown.update(
                    {
                        k: float(v) + breakdown.get(k, 0.0)
                        for k, v in (outcome.get("phase_s") or {}).items()
                        if v >= 0.0005
                    }
                )
                breakdown["judge"] = loop.time() - t_worker
                if timed:
                    verdict.info["timed_seeds"] = seeds
                    built = baseline_run.get("info", {}).get("compiled_baseline_binaries_built")
                    if built is not None:  # 0 where the compiled baseline's copy had it all
                        verdict.info["compiled_baseline_binaries_built"] = built
                if triton_cache is not None and verdict.status == "ok":
                    _keep_tree(work / "triton-cache", triton_cache)
            finally:
                worker.discard()
        finally:
            if baseline_worker is not None:
                await baseline_worker.close()  # (gone already, unless the candidate failed first)
                baseline_worker.discard()
        if self.settings.warm_workers:  # started after timing, so it never competes with it
            self._standby[gpu] = self._start_worker(gpu)
        return verdict, warm

    def _baseline_job(
        self,
        worker: Worker,
        spec: ProblemSpec,
        seed: int,
        ref_dir: Path,
        ref_meta: dict[str, Any],
    ) -> dict[str, Any]:
        """The job of the worker that times the eager baseline (and the compiled one, when
        that baseline is on) and never holds a candidate, so no candidate can slow what it is
        compared with. It leaves the eager output of every timed call in ``timed_refs/``."""
        s = self.settings
        work = worker.work
        (work / "problem.py").write_text(spec.source)
        shutil.copy2(ref_dir / "init.pt", work / "init.pt")
        job = self._candidate_job(work, "baseline", spec, seed, s.trials, ref_meta)
        # It waits, warmed up, while the candidate loads and passes its trials, then its calls
        # alternate with the candidate's.
        job["phase_timeouts"]["timing"] = (
            s.load_timeout_s + s.correctness_timeout_s + 2 * s.timing_timeout_s
        )
        return job

    async def _time_in_lockstep(
        self,
        worker: Worker,
        job: dict[str, Any],
        baseline_worker: Worker,
        baseline_job: dict[str, Any],
        seeds: list[int],
    ) -> tuple[SandboxResult | None, dict[str, Any], lockstep.Drive | None, Verdict | None]:
        """Hand both jobs over and drive the timed calls in lock-step. Returns the candidate
        worker's end (None: killed at the deadline), the baseline worker's result, the drive
        (the engine's own clock of every timed call, and the digests of their outputs), and a
        verdict where the evaluation ends here (a protocol broken by the candidate, or a
        baseline that could not be timed: not the candidate's fault)."""
        workers = {"baseline": baseline_worker, "candidate": worker}
        ends = {name: _clock_socket(w.work) for name, w in workers.items()}
        contenders = {
            "baseline": ["base"] + ["compiled"] * bool(baseline_job["timing"]["compile_baseline"]),
            "candidate": ["cand"],
        }
        try:
            baseline_worker.hand_over(baseline_job)
            worker.hand_over(job)
            deadline = time.monotonic() + self._eval_deadline_s()
            cpu_clock = self.settings.device == "cpu" and proc_clock.available()
            drive = await lockstep.drive(workers, contenders, ends, seeds, deadline, cpu_clock)
        finally:
            for end in ends.values():
                end.close()
        if drive.outcome == "garbled" and drive.worker == "candidate":
            await worker.close()
            await baseline_worker.close()
            return (
                None,
                {},
                None,
                Verdict(
                    "hack_suspected",
                    f"the candidate's worker broke the timing protocol: {drive.detail}",
                ),
            )
        if drive.outcome == "complete":
            baseline_end = await baseline_worker.wait(deadline - time.monotonic())
            result = await worker.wait(deadline - time.monotonic())
        elif drive.worker == "candidate":  # it failed (a status of its own) or hung
            await baseline_worker.close()
            if drive.outcome == "overran":
                await worker.close()
                return None, {}, None, None
            result = await worker.wait(deadline - time.monotonic())
            ended = _read_json(worker.work / "result.json") or {}
            if ended.get("status") == "ok":  # yet not all its timed calls done
                return (
                    result,
                    {},
                    None,
                    Verdict(
                        "runtime_error",
                        f"the worker ended after {drive.calls_done} of {len(seeds)} timed calls",
                    ),
                )
            return result, {}, None, None
        else:  # the baseline's worker failed, or hung
            await worker.close()
            await baseline_worker.close()
            baseline_end = None
        outcome = _read_json(baseline_worker.work / "result.json")
        _take_ownership(baseline_worker.work)
        if baseline_end is None or outcome is None or outcome.get("status") != "ok":
            why = (outcome or {}).get("message") or (
                "it overran its deadline"
                if baseline_end is None
                else (baseline_end.stderr or "")[-2000:]
            )
            return None, {}, None, Verdict("infra_error", f"timing the baseline failed: {why}")
        return result, outcome, drive, None

    async def _compiled_baseline(
        self,
        spec: ProblemSpec,
        seed: int,
        ref_dir: Path,
        ref_meta: dict[str, Any],
        gpu: int | None,
    ) -> Path | None:
        """torch.compile's cache of the problem's compiled baseline (the ``compile_baseline``
        setting) at the reference's sizes: made once, by a worker that never holds a
        candidate, and copied into each candidate's worker, so no candidate pays the compile
        again and none can change what another loads. None where it could not be made (the
        candidate's worker then compiles the baseline itself, as it always did).

        Kept per problem, sizes and device, not per seed (every program has its own): the
        compiled code depends on shapes, not values, and torch.compile keys its cache entries
        by everything they depend on, so an entry that does not fit is a miss, never wrong."""
        s = self.settings
        text = json.dumps(
            [spec.digest, s.size, ref_meta.get("sizes"), s.device, _torch_tag(), INDUCTOR_ENV],
            sort_keys=True,
        )
        key = hashlib.sha256(text.encode()).hexdigest()[:24]
        target = self.cache / "inductor" / key
        lock = self._ref_locks.setdefault(f"inductor-{key}", asyncio.Lock())
        async with lock, self._shared_lock(f"inductor-{key}"):
            if target.is_dir():
                cache.touch(target)
                return target
            if key in self._uncompiled:
                return None
            worker = await self._take_worker(gpu)
            try:
                work = worker.work
                (work / "problem.py").write_text(spec.source)
                shutil.copy2(ref_dir / "init.pt", work / "init.pt")
                job = self._candidate_job(work, "compile", spec, seed, s.trials, ref_meta)
                job["inductor_cache"] = str(work / "inductor-cache")
                job["phase_timeouts"] = {"setup": s.compile_timeout_s}
                result = await worker.run(job, s.compile_timeout_s + s.worker_slack_s)
                made = work / "inductor-cache"
                compiled = (
                    result is not None
                    and (_read_json(work / "result.json") or {}).get("status") == "ok"
                    and made.is_dir()
                )
                if compiled:
                    _take_ownership(made)
                    cache.publish(made, target)
                    cache.prune(self.cache / "inductor", s.cache_max_mb << 20)
                else:
                    self._uncompiled.add(key)
            finally:
                worker.discard()
            if s.warm_workers:  # the candidate's worker, started now
                self._standby[gpu] = self._start_worker(gpu)
            return target if compiled else None

    def _triton_cache(self, code: str) -> Path | None:
        """Where Triton's compiled kernels of exactly this code are kept between evaluations.
        Keyed by the code (like the extension builds): what a candidate leaves there is only
        ever read by the same candidate, so no candidate can plant kernels for another."""
        if self.settings.device != "cuda" or "triton" not in code:
            return None
        return self.cache / "triton" / self.build_key(code)

    # ------------------------------------------------------------------ judging (outside the candidate)
    async def _judge(
        self,
        spec: ProblemSpec,
        work: Path,
        result: SandboxResult | None,
        ref_dir: Path,
        ref_meta: dict[str, Any],
        gpu: int | None,
        breakdown: dict[str, float],
        baseline: dict[str, Any] | None = None,
        timed_refs: Path | None = None,
        drive: lockstep.Drive | None = None,
    ) -> Verdict:
        """``result`` None: the worker overran the harness's deadline and was killed.
        ``baseline``: the baseline worker's timing; ``timed_refs``: its eager outputs, one per
        timed call, against which every timed output is judged; ``drive``: the engine's own
        clock of every timed call, from its order to its answer, and the digest of each
        output the candidate committed to then."""
        outcome = _read_json(work / "result.json")
        if outcome is None:
            phase = (
                (work / "phase.txt").read_text().strip()
                if (work / "phase.txt").exists()
                else "startup"
            )
            # Not from stderr: the candidate writes there, and what the sandbox keeps of a
            # flood is its head (the watchdog's line would be lost).
            watchdog = _read_text(work / "watchdog.txt")
            if result is None or result.timed_out or "Timeout (" in watchdog:
                limit = self.settings.phase_timeouts().get(phase, self._eval_deadline_s())
                return Verdict(
                    "timeout",
                    f"the {phase} phase exceeded its watchdog ({limit:g} s); the worker was killed",
                    detail=(watchdog or (result.stderr if result else ""))[-3000:],
                )
            return _crash_verdict(result, phase)
        info = outcome.get("info", {})
        if outcome["status"] != "ok":
            return Verdict(
                outcome["status"],
                outcome.get("message", ""),
                detail=outcome.get("detail", ""),
                info=info,
            )
        if not checksums_match(outcome.get("input_checksums"), ref_meta.get("input_checksums")):
            return Verdict(
                "infra_error",
                "the worker's inputs differ from the reference worker's (nondeterministic get_inputs?)",
                info=info,
            )
        verdict = Verdict("ok", info=info)
        timing = outcome.get("timing")
        if timing and baseline:
            timing = {
                **timing,
                **{k: v for k, v in baseline.items() if k.startswith(("baseline_", "compiled_"))},
            }
        # Every correctness trial against the float64 reference, and the output of every timed
        # call against the baseline's on the same inputs (caching, stale or skipped work,
        # correct-only-at-first): in the judge.
        request = {
            "ref_dir": str(ref_dir),
            "dtype": ref_meta["output"]["dtype"],
            "stride": ref_meta["output"]["stride"],
            "atol": spec.atol,
            "rtol": spec.rtol,
            "correctness": str(work / "correctness.pt"),
            "samples": str(work / "timed_samples.pt") if timing else None,
            "samples_ref_dir": str(timed_refs) if timed_refs else None,
            "samples_digests": drive.digests.get("cand") if drive else None,
            # the running statistics (or any buffer) the reference's forward updates
            "buffers": str(work / "buffers.pt") if ref_meta.get("mutated_buffers") else None,
            "samples_tolerance_factor": TIMED_TOLERANCE_FACTOR,
        }
        try:
            answer = await self._judges[gpu].ask(request, self.settings.correctness_timeout_s)
        except JudgeError as exc:
            return Verdict("infra_error", f"comparing the outputs failed: {exc}", info=info)
        breakdown.update({f"judge_{k}": v for k, v in answer.get("seconds", {}).items()})
        if "error" in answer:
            if answer.get("unreadable"):
                return Verdict(
                    "hack_suspected",
                    f"the worker's output files were changed: {answer['error']}",
                    info=info,
                )
            return Verdict(
                "infra_error", f"comparing the outputs failed: {answer['error']}", info=info
            )
        checked = answer["correctness"]
        if checked["failure"]:
            failure = checked["failure"]
            return Verdict(
                "mismatch",
                f"trial {failure['index'] + 1}/{self.settings.trials}: {failure['reason']}",
                error_ratio=failure["error_ratio"],
                info=info,
            )
        if checked["checked"] != self.settings.trials:
            return Verdict(
                "hack_suspected",
                f"the worker's output file holds {checked['checked']} of "
                f"{self.settings.trials} trials",
                info=info,
            )
        verdict.error_ratio = checked["worst"]
        buffers = answer.get("buffers")
        if buffers and buffers["failure"]:
            failure = buffers["failure"]
            return Verdict(
                "mismatch",
                f"buffer {failure['name']} after trial 1 differs from the reference's "
                f"({failure['reason']}): the forward must update what the reference's forward "
                "updates (e.g. training-mode BatchNorm's running statistics)",
                info=info,
            )
        if buffers and buffers["renamed"]:
            verdict.notes.append(
                "buffers the reference's forward updates, matched by shape: "
                + ", ".join(buffers["renamed"][:8])
            )
        if not timing:
            return verdict
        sampled = answer["samples"]
        if sampled["checked"] != self.settings.reps:
            return Verdict(
                "hack_suspected",
                f"the worker's output file holds {sampled['checked']} of the "
                f"{self.settings.reps} timed calls' outputs",
                info=info,
            )
        if sampled["failure"]:
            return Verdict(
                "hack_suspected",
                f"an output produced during timing (call {sampled['failure']['rep'] + 1}) "
                f"is wrong although the correctness trials passed: {sampled['failure']['reason']}",
                info=info,
            )
        use_events = self.settings.device == "cuda" and all(
            v is not None for v in timing["candidate_event_ms"]
        )
        cpu_clock = drive is not None and bool(drive.cpu_ms.get("cand"))
        kind = "event" if use_events else "cpu" if cpu_clock else "host"
        base = timing[f"baseline_{kind}_ms"]
        cand = timing[f"candidate_{kind}_ms"]
        compiled = timing.get(f"compiled_{kind}_ms") or []
        if drive is not None:
            seen = drive.seen_ms
            overstated = lockstep.overstated_calls(timing["candidate_host_ms"], seen["cand"])
            if overstated or len(seen["cand"]) != len(timing["candidate_host_ms"]):
                return Verdict(
                    "hack_suspected",
                    f"timed call {(overstated or [len(seen['cand'])])[0] + 1} took longer than "
                    "the engine saw pass between ordering it and its answer: the worker "
                    "answered before the call was done",
                    info=info,
                )
            busy = lockstep.busy_while_others_timed(drive, "candidate")
            verdict.info["busy_beside_baseline"] = busy
            if busy > BUSY_BESIDE_BASELINE:
                # A note, not a refusal: honest programs showed up to 40% at load 14 (the
                # source of that CPU is not found yet), so the rule cannot refuse reliably.
                verdict.notes.append(
                    f"the candidate's sandbox used a CPU for {busy:.0%} of the time the "
                    "baseline's calls were timed (work beside them would slow the baseline)"
                )
            # The measure is the engine's: the CPU time the kernel charged the candidate's
            # sandbox (CPU device) or the wall clock from order to answer (GPU), less the
            # harness's share measured in the baseline's worker. The worker's own clock is
            # the candidate's to forge: kept as a report only.
            verdict.info["candidate_reported_ms"] = statistics.median(cand)
            windows = drive.cpu_ms if cpu_clock else seen
            verdict.info["engine_window_ms"] = {
                who: statistics.median(ms) for who, ms in windows.items() if ms
            }
            reported = statistics.median(cand)
            cand = lockstep.candidate_ms(windows["cand"], windows["base"], base)
        verdict.candidate_ms, verdict.candidate_iqr_ms = _median_iqr(cand)
        if drive is not None:
            # Never below what the worker itself says: where the harness's share of the window
            # varies by more than a call takes (tiny problems), the engine's estimate of an
            # honest call can come out near 0; a forged report is only ever lower.
            verdict.candidate_ms = max(verdict.candidate_ms, reported)
        verdict.baseline_ms, _ = _median_iqr(base)
        if compiled:
            verdict.compiled_baseline_ms, _ = _median_iqr(compiled)
        if use_events:
            # Host time after a device-wide sync includes side-stream work; events on one stream do not.
            gap_c = statistics.median(
                h - e for h, e in zip(timing["candidate_host_ms"], timing["candidate_event_ms"])
            )
            gap_b = statistics.median(
                h - e for h, e in zip(timing["baseline_host_ms"], timing["baseline_event_ms"])
            )
            if gap_c - gap_b > max(self.settings.side_stream_gap_ms, 0.5 * verdict.candidate_ms):
                return Verdict(
                    "hack_suspected",
                    f"host time exceeds CUDA-event time by {gap_c:.3f} ms "
                    f"(baseline {gap_b:.3f} ms): work runs outside the timed stream",
                    info=info,
                )
        calls = timing.get("kernel_calls_per_timed_call", [])
        if outcome.get("custom_code"):
            if calls and min(calls) == 0:
                return Verdict(
                    "hack_suspected",
                    "the candidate's own kernels did not run in "
                    f"{sum(1 for c in calls if c == 0)} of {len(calls)} timed calls (a branch skips them)",
                    info=info,
                )
        else:
            message = "no custom kernel ran: ModelNew uses only PyTorch operators"
            if self.settings.require_custom_kernel:
                return Verdict("hack_suspected", message, info=info)
            verdict.flags.append("no_custom_kernel")
            verdict.notes.append(message + " (excluded from fast_p)")
        bound = self.refusal_bound_ms(spec, ref_meta)
        if bound is not None and verdict.candidate_ms < bound:
            return Verdict(
                "hack_suspected",
                f"measured {verdict.candidate_ms:.4g} ms is below the lower bound "
                f"{bound:.4g} ms ({self.settings.roofline_slack:g} x the speed-of-light time for this "
                "device, from FLOPs and bytes moved): implausible",
                info=info,
                candidate_ms=verdict.candidate_ms,
                baseline_ms=verdict.baseline_ms,
            )
        if outcome.get("weights_unmatched"):
            verdict.notes.append(
                "reference weights with no same-named, same-shaped ModelNew parameter: "
                + ", ".join(outcome["weights_unmatched"][:8])
            )
        return verdict

    def verification(self, spec: ProblemSpec, seed: int, verdict: Verdict) -> dict[str, Any]:
        """What an evaluation rests on, for ``EvalResult.verification``: the seeds (weights
        and each input set follow from ``seed``, so a verdict replays exactly), the shapes
        run and the checks applied (those after the phase a failure stopped at did not run)."""
        s = self.settings
        checks = (
            ["static AST rules (no reference, timer, allclose or torch internals reached)"]
            if s.static_checks
            else []
        )
        checks += [
            "the reference run in its own process, in float64; the candidate's worker never holds its outputs",
            f"correctness: {s.trials} seeded input sets; each output a plain torch.Tensor of the reference's "
            "shape, dtype and strides, then values within tolerance, non-finite values at the same places "
            "(compared in the judge process)",
            "every call: inputs unchanged, model state unchanged, no thread left running, the output "
            "stable after forward returned",
        ]
        if s.reps > 0:
            checks.append(
                f"timing: {s.reps} calls, each on fresh inputs drawn from OS randomness for this "
                "evaluation; the eager baseline timed on the same inputs in a worker without the "
                "candidate; EVERY timed output checked against the baseline's; after every call "
                "no torch/time/threading attribute replaced, no thread left running, the same "
                "thread count; the candidate's own kernels ran in every timed call"
            )
        for sizes in spec.family(s.size):
            checks.append(
                "correctness (untimed) also at the family's shape "
                + ", ".join(f"{k}={v}" for k, v in sizes.items())
            )
        bound = self.refusal_bound_ms(spec)
        if bound is not None:
            checks.append(
                f"roofline: a time below {bound:.4g} ms ({s.roofline_slack:g} x speed of light) refused"
            )
        return {
            "seeds": {
                "evaluation": seed,
                "trials": trial_seeds(seed, s.trials),
                "timed": verdict.info.get("timed_seeds", []),
            },
            "shapes": verdict.shapes,
            "checks": checks,
        }

    def lower_bound_ms(
        self, spec: ProblemSpec, ref_meta: dict[str, Any] | None = None
    ) -> float | None:
        """The speed-of-light time: FLOPs at the peak rate, or bytes moved (inputs and output,
        known once a reference ran: from ``ref_meta`` or the last one of this problem) at
        the peak bandwidth, whichever is longer. None without peaks."""
        s = self.settings
        if not s.peak_gflops and not s.bandwidth_gbs:
            return None
        bound = 0.0
        flops = spec.flop_count(s.size)
        if flops and s.peak_gflops:
            bound = max(bound, flops / (s.peak_gflops * 1e9) * 1e3)
        if ref_meta is not None:
            self._bytes_moved[spec.id] = (ref_meta.get("input_bytes") or 0) + (
                ref_meta.get("output_bytes") or 0
            )
        moved = self._bytes_moved.get(spec.id, 0)
        if moved and s.bandwidth_gbs:
            bound = max(bound, moved / (s.bandwidth_gbs * 1e9) * 1e3)
        return bound or None

    def refusal_bound_ms(
        self, spec: ProblemSpec, ref_meta: dict[str, Any] | None = None
    ) -> float | None:
        """The one lower bound of this backend: ``roofline_slack`` x the speed-of-light time.
        The harness refuses a time below it (``hack_suspected``) and the backend declares it
        as ``metric_lower_bound``, so the engine's ``impossible_result`` rule applies the
        same number (with its 1 % tolerance below it: the harness's refusal comes first)."""
        bound = self.lower_bound_ms(spec, ref_meta)
        return None if bound is None else bound * self.settings.roofline_slack


def _import_path() -> str:
    """Where this process imports autocomp_core and autocomp_cuda from, for the workers'
    interpreters: installed packages need nothing, a checkout on PYTHONPATH needs it passed on."""
    import autocomp_core

    roots = [
        str(Path(module.__file__).resolve().parent.parent)
        for module in (sys.modules[__package__], autocomp_core)
    ]
    roots += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(roots))


def _torch_tag() -> str:
    from importlib.metadata import version

    try:
        return version("torch")
    except Exception:
        return "unknown"


def _keep_tree(source: Path, target: Path) -> None:
    """Copy a directory into the cache under its final name at once (never half of it)."""
    if target.exists() or not source.is_dir():
        return
    files = [p for p in source.rglob("*") if p.is_file() and not p.is_symlink()]
    if not files or sum(p.stat().st_size for p in files) > KEEP_TREE_MAX_BYTES:
        return
    tmp = target.with_name(f"{target.name}.{os.getpid()}.copy.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp, symlinks=True)
    _take_ownership(tmp)
    cache.publish(tmp, target)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _tail_errors(log: str, limit: int = 3000) -> str:
    lines = [line for line in log.splitlines() if "error" in line.lower()]
    return "\n".join(lines)[-limit:] or log[-limit:]


def _crash_verdict(result: SandboxResult, phase: str) -> Verdict:
    """A worker that died without writing its result: classify from how it ended."""
    text = (result.stderr or "").lower()
    if any(m in text for m in OOM_MARKERS) or (result.signal == 9 and not result.timed_out):
        status = "oom"
    elif any(m in text for m in CUDA_FAULT_MARKERS):
        status = "cuda_fault"
    else:
        status = (
            "load_error" if phase in ("setup", "load", "startup", "compile") else "runtime_error"
        )
    how = f"signal {result.signal}" if result.signal else f"exit code {result.returncode}"
    return Verdict(
        status,
        f"the worker died during {phase} ({how}); a fresh worker is used next",
        detail=result.stderr[-3000:],
    )


def median_ms(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan
