"""The evaluation pipeline, run from the engine's process.

    static AST rules ─► reference outputs (own process, cached per problem+seed: reference.py)
                    ─► build (own process, parallel on CPU cores, content-hashed cache: builds.py)
                    ─► load / correctness / timing (own sandboxed process, one per device slot;
                       timed in lock-step beside the baselines' worker: timing.py)
                    ─► comparison against the float64 reference (the judge: a trusted process
                       per device slot, kept) ─► roofline, verdict (judging.py)

Every candidate child runs through ``autocomp_core.sandbox.run_sandboxed`` in a private work
dir that holds only what it needs: the candidate never sees reference outputs. Each
candidate gets its own process, which ends with it: a watchdog, a CUDA fault or an
allocation failure takes nothing else down. The next candidate's process is started ahead
of need (``workers.Worker``), so it finds torch already imported. This process never
imports torch: tensors are only touched by the children and the judge.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import cache, code_samples, compiler_feedback, lockstep, static_check
from ..judge import Judge
from ..problemset import ProblemSpec
from ..workers import Worker
from .builds import Builds
from .children import Children
from .files import give_to_worker, keep_tree, read_json
from .jobs import baseline_job, candidate_job, give_problem
from .judging import Case, judge
from .reference import ProblemRefused, References, trial_seeds
from .settings import Settings
from .timing import time_in_lockstep, timed_seeds
from .verdicts import Verdict, describe_sizes

#: A reference: its dir and its meta.json.
Ref = tuple[Path, dict[str, Any]]


@dataclass(frozen=True)
class Program:
    """The program one evaluation runs: its problem, code, seed and built extensions."""

    spec: ProblemSpec
    code: str
    seed: int
    prebuilt: Path | None


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
        if settings.device == "cpu":  # (whether this machine can sample a worker's threads,
            code_samples.available()  # asked before any candidate runs: kernel_evidence)
        self.children = Children(settings, [self.cache, *cache.usual_roots()])
        self.references = References(self.cache, settings, self.children)
        self.builds = Builds(self.cache, settings, self.children, compile_workers)
        # One evaluation slot per GPU (timing is serialized per device); one for the CPU.
        self._gpu_ids = list(gpu_ids or [0]) if settings.device == "cuda" else [None]
        self._free_devices: asyncio.Queue | None = None
        self._judges = {gpu: Judge.shared(self.children.judge_env(gpu)) for gpu in self._gpu_ids}
        self._bytes_moved: dict[str, int] = {}  # per problem id, from its last reference

    @property
    def device_slots(self) -> int:
        """Evaluations that can time at once: one per GPU, one on the CPU device."""
        return len(self._gpu_ids)

    async def warm_up(self, timeout_s: float = 120.0) -> bool:
        """Start a standby worker on every device slot and wait until each has its imports
        done. Evaluations do this by themselves; call it to have the first one warm too."""
        standby = self.children.standby
        for gpu in self._gpu_ids:
            self._judges[gpu].start()
            standby[gpu] = await self.children.take_worker(gpu)
        ready = await asyncio.gather(*(w.wait_ready(timeout_s) for w in standby.values()))
        return all(ready)

    async def aclose(self) -> None:
        """Stop the standby workers (an event loop that ends cancels them too). The judges are
        shared by the harnesses of this process: they leave when idle or when it exits."""
        workers, self.children.standby = list(self.children.standby.values()), {}
        for worker in workers:
            if worker.loop is asyncio.get_running_loop():
                await worker.close()
        await self.references.close()

    async def reference(
        self,
        spec: ProblemSpec,
        seed: int,
        gate: bool = False,
        sizes: dict[str, Any] | None = None,
    ) -> Ref:
        """Reference outputs for (problem, seed) (``References.get``)."""
        return await self.references.get(spec, seed, gate, sizes)

    async def build(self, code: str) -> tuple[Path | None, Verdict | None, bool, str]:
        """Compile the candidate's extensions. Returns (prebuilt dir, failure, cache hit, build log)."""
        return await self.builds.build(code)

    # ------------------------------------------------------------------ evaluation
    async def evaluate(self, spec: ProblemSpec, code: str, seed: int = 0) -> Verdict:
        loop = asyncio.get_running_loop()
        started = loop.time()
        refused = self._screen(code)
        if refused is not None:
            return refused
        for judge_process in self._judges.values():
            judge_process.start()  # its imports overlap with the reference, the build and the run
        refs = await self._references(spec, seed)
        if isinstance(refs, str):
            return Verdict("infra_error", refs, phases_s={"reference": loop.time() - started})
        (ref_dir, ref_meta), family = refs
        t_ref = loop.time()
        shapes = {"inputs": ref_meta.get("input_shapes"), "output": ref_meta["output"]}
        prebuilt, failure, cache_hit, build_log = await self.build(code)
        t_build = loop.time()
        if failure is not None:
            failure.phases_s = {"reference": t_ref - started, "build": t_build - t_ref}
            failure.shapes = shapes
            return failure
        breakdown: dict[str, float] = {}
        program = Program(spec, code, seed, prebuilt)
        verdict, warm = await self._run_on_device(program, (ref_dir, ref_meta), family, breakdown)
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
        self._account(verdict, breakdown, build_log)
        return verdict

    def _screen(self, code: str) -> Verdict | None:
        """The verdict on code that never runs: it does not parse, or the static rules refuse it."""
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
        return None

    async def _references(
        self, spec: ProblemSpec, seed: int
    ) -> tuple[Ref, list[tuple[dict[str, Any], Ref]]] | str:
        """The reference at the timed shape, and one per shape of the problem's family; or
        why the problem cannot run here (one line)."""
        try:
            ref = await self.reference(spec, seed)
        except ProblemRefused as exc:
            return f"the problem cannot run here: {exc}"
        family = spec.family(self.settings.size)
        if ref[1].get("second_shape"):  # shrinking made a size 1: also checked at 2
            family.append(ref[1]["second_shape"])
        try:
            family_refs = [await self.reference(spec, seed, sizes=sizes) for sizes in family]
        except ProblemRefused as exc:
            return f"a shape of the problem's family cannot run here: {exc}"
        return ref, list(zip(family, family_refs))

    def _account(self, verdict: Verdict, breakdown: dict[str, float], build_log: str) -> None:
        """Where the eval phase went, and what the compiler said of the kernels (GPU)."""
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

    def _devices(self) -> asyncio.Queue:
        """The free device slots (made on first use, in the event loop that uses them)."""
        if self._free_devices is None:
            self._free_devices = asyncio.Queue()
            for gpu in self._gpu_ids:
                self._free_devices.put_nowait(gpu)
        return self._free_devices

    async def _run_on_device(
        self,
        program: Program,
        ref: Ref,
        family: list[tuple[dict[str, Any], Ref]],
        breakdown: dict[str, float],
    ) -> tuple[Verdict, bool]:
        """Right at the timed shape: then, untimed, at each shape of the declared family."""
        devices = self._devices()
        gpu = await devices.get()
        try:
            verdict, warm = await self._run_worker(program, ref, gpu, breakdown)
            for sizes, family_ref in family:
                if verdict.status != "ok":
                    break
                at_shape, _ = await self._run_worker(program, family_ref, gpu, {}, timed=False)
                verdict.info.setdefault("shapes_checked", []).append(sizes)
                if at_shape.status != "ok":
                    shown = ", ".join(f"{k}={v}" for k, v in sizes.items())
                    at_shape.message = f"at the family's shape {shown}: {at_shape.message}"
                    verdict = at_shape
        finally:
            devices.put_nowait(gpu)
        return verdict, warm

    async def _run_worker(
        self,
        program: Program,
        ref: Ref,
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
        timed = timed and self.settings.reps > 0
        baseline: tuple[Worker, dict[str, Any]] | None = None
        try:
            if timed:
                baseline = await self._start_baseline(program, ref, gpu)
            worker = await self.children.take_worker(gpu)
            warm = worker.ready
            try:
                verdict, timing_failed = await self._run_candidate(
                    worker, program, ref, gpu, breakdown, baseline, timed
                )
            finally:
                worker.discard()
        finally:
            if baseline is not None:
                await baseline[0].close()  # (gone already, unless the candidate failed first)
                baseline[0].discard()
        if not timing_failed:  # started after timing, so it never competes with it
            self.children.restock(gpu)
        return verdict, warm

    async def _start_baseline(
        self, program: Program, ref: Ref, gpu: int | None
    ) -> tuple[Worker, dict[str, Any]]:
        """The worker that times the baselines, and its job. A fresh process (the standby one
        goes to the candidate): it starts while the candidate loads, long before anything is
        timed."""
        ref_dir, ref_meta = ref
        spec, seed = program.spec, program.seed
        compiled = None
        if self.settings.compile_baseline:
            compiled = await self.builds.compiled_baseline(spec, seed, ref_dir, ref_meta, gpu)
        worker = self.children.start_worker(gpu)
        job = baseline_job(self.settings, worker.work, spec, seed, ref_dir, ref_meta)
        if compiled is not None:  # a copy: the cache kept stays as it was made
            work = worker.work
            shutil.copytree(compiled, work / "inductor-cache", symlinks=True)
            give_to_worker(work / "inductor-cache", work)
            job["inductor_cache"] = str(work / "inductor-cache")
        return worker, job

    async def _run_candidate(
        self,
        worker: Worker,
        program: Program,
        ref: Ref,
        gpu: int | None,
        breakdown: dict[str, float],
        baseline: tuple[Worker, dict[str, Any]] | None,
        timed: bool,
    ) -> tuple[Verdict, bool]:
        """The candidate's worker runs its job (timed: beside the baseline's), then the judge.
        Returns the verdict and whether it came from the timing protocol, before judging."""
        loop = asyncio.get_running_loop()
        ref_dir, ref_meta = ref
        seeds = timed_seeds(self.settings.reps) if timed else []
        job, triton_cache = self._hand_files(worker.work, program, ref, timed)
        self._judges[gpu].start()  # (again: an idle judge leaves, during a long build)
        handed_over = time.time()
        baseline_run: dict[str, Any] = {}
        drive: lockstep.Drive | None = None
        if baseline is not None:
            result, baseline_run, drive, failure = await time_in_lockstep(
                self.settings, worker, job, *baseline, seeds, ref_meta["output"]
            )
            if failure is not None:
                return failure, True
        else:
            result = await worker.run(job, self.settings.eval_deadline_s())
        t_worker = loop.time()
        spec = program.spec
        case = Case(
            self.settings,
            spec,
            worker.work,
            result,
            ref_dir,
            ref_meta,
            self._judges[gpu],
            breakdown,
            bound_ms=lambda: self.refusal_bound_ms(spec, ref_meta),
            baseline=baseline_run.get("timing"),
            timed_refs=baseline[0].work / "timed_refs" if baseline else None,
            drive=drive,
            code=program.code,
        )
        try:
            verdict = await judge(case)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
            # (the worker's result is the candidate's channel: a field of the wrong type or
            # shape broke a check, and is its doing: the fifth meter red team's a14)
            verdict = Verdict(
                "hack_suspected",
                f"the worker's result is malformed ({type(exc).__name__}: {str(exc)[:200]})",
            )
        _add_worker_phases(breakdown, worker.work, handed_over)
        breakdown["judge"] = loop.time() - t_worker
        if timed:
            verdict.info["timed_seeds"] = seeds
            built = baseline_run.get("info", {}).get("compiled_baseline_binaries_built")
            if built is not None:  # 0 where the compiled baseline's copy had it all
                verdict.info["compiled_baseline_binaries_built"] = built
        if triton_cache is not None and verdict.status == "ok":
            keep_tree(worker.work / "triton-cache", triton_cache)
        return verdict, False

    def _hand_files(
        self, work: Path, program: Program, ref: Ref, timed: bool
    ) -> tuple[dict[str, Any], Path | None]:
        """The candidate's worker's files and job; and where its Triton kernels are kept
        (None: not kept)."""
        s, spec, prebuilt = self.settings, program.spec, program.prebuilt
        ref_dir, ref_meta = ref
        (work / "candidate.py").write_text(program.code)
        give_problem(work, spec, ref_dir)
        job = candidate_job(s, work, "eval", spec, program.seed, s.trials, ref_meta, timed)
        if timed:  # its timed calls wait for the baseline's in between
            job["phase_timeouts"]["timing"] = 2 * s.timing_timeout_s
        if prebuilt is not None:
            shutil.copytree(prebuilt, work / "prebuilt")
            job["prebuilt"] = str(work / "prebuilt")
        triton_cache = self.builds.triton_cache(program.code)
        if triton_cache is not None:
            job["triton_cache"] = str(work / "triton-cache")
            if triton_cache.exists():
                shutil.copytree(triton_cache, work / "triton-cache", symlinks=True)
                give_to_worker(work / "triton-cache", work)
        return job, triton_cache

    # ------------------------------------------------------------------ what a verdict rests on
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
                "candidate; EVERY timed output checked against the baseline's; "
                + (
                    "the engine writes each call's inputs into the worker and reads its output "
                    "out itself, and times the call by the CPU its sandbox used; no more processes "
                    "or threads in its sandbox than in the baseline's; after the last call no "
                    "torch/time/threading attribute replaced, no thread left running"
                    if s.device == "cpu"
                    else "after every call no torch/time/threading attribute replaced, no thread "
                    "left running, the same thread count"
                )
                + "; the candidate's own kernels ran in every timed call"
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


def _add_worker_phases(breakdown: dict[str, float], work: Path, handed_over: float) -> None:
    """The worker's own account of its phases, and its startup (job handed over until begun)."""
    outcome = read_json(work / "result.json") or {}
    received, phases = outcome.get("job_received"), outcome.get("phase_s")
    if isinstance(received, (int, float)) and received:
        breakdown["startup"] = max(0.0, received - handed_over)
    if isinstance(phases, dict):  # (a report only: what is not a number is left out)
        breakdown.update(
            {
                k: float(v) + breakdown.get(k, 0.0)
                for k, v in phases.items()
                if isinstance(v, (int, float)) and v >= 0.0005
            }
        )
