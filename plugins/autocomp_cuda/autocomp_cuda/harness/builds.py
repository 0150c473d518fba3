"""What is compiled once and reused, each in the cache under a key of everything it depends
on: a candidate's extensions (``builds/``, compiled in a sandboxed child, in parallel on the
CPU cores), its Triton kernels (``triton/``, read only by the same code) and torch.compile's
cache of a problem's compiled baseline (``inductor/``)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from autocomp_core import SandboxResult, private_workdir

from .. import cache, compiler_feedback
from ..problemset import ProblemSpec
from ..runtime import worker_files
from .children import Children
from .files import read_json, read_text, shared_lock, take_ownership, torch_tag
from .jobs import candidate_job, give_problem
from .settings import INDUCTOR_ENV, Settings
from .verdicts import Verdict, crash_verdict, result_malformed, tail_errors

USES_EXTENSION = ("load_inline", "cpp_extension")
#: What an extension a build reports may be called, and hold.
LIBRARY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
#: The most libraries one build may keep, the most bytes each, and all of them (a report of
#: many sparse gigabyte "libraries" made the engine read each into its memory and write real
#: copies of them: the ninth red team's a06).
LIBRARIES_MAX, LIBRARY_MAX_BYTES, LIBRARIES_MAX_BYTES = 16, 2**28, 2**29


class Builds:
    def __init__(
        self,
        cache_dir: Path,
        settings: Settings,
        children: Children,
        compile_workers: int | None = None,
    ) -> None:
        self.cache = cache_dir
        self.settings = settings
        self.children = children
        self._locks: dict[str, asyncio.Lock] = {}
        self._slots = asyncio.Semaphore(compile_workers or max(1, os.cpu_count() or 1))
        self._uncompiled: set[str] = set()  # compiled-baseline keys whose compile failed

    def key(self, code: str) -> str:
        return hashlib.sha256(
            json.dumps([code, self.settings.device, torch_tag()]).encode()
        ).hexdigest()[:24]

    async def build(self, code: str) -> tuple[Path | None, Verdict | None, bool, str]:
        """Compile the candidate's extensions. Returns (prebuilt dir, failure, cache hit, build log)."""
        if not any(word in code for word in USES_EXTENSION):
            return None, None, False, ""
        key = self.key(code)
        target = self.cache / "builds" / key
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock, shared_lock(self.cache, f"build-{key}"):
            if (target / "built.json").exists():
                cache.touch(target)
                log = read_text(target / "build.log")
                return target, None, True, log
            async with self._slots:
                with private_workdir("autocomp-cuda-build-") as work:
                    (work / "candidate.py").write_text(code)
                    job = candidate_job(self.settings, work, "build", None, None, 0)
                    wall_s = self.settings.compile_timeout_s
                    result = await self.children.run("candidate_main", job, work, wall_s)
                    log = result.stdout + "\n" + result.stderr
                    outcome = read_json(work / "result.json")
                    failure = self._failure(code, work, result, outcome, log)
                    if failure is not None:
                        return None, failure, False, log
                    failure = self._keep(work, outcome or {}, log, target)
                    if failure is not None:
                        return None, failure, False, log
            return target, None, False, log

    def _failure(
        self,
        code: str,
        work: Path,
        result: SandboxResult,
        outcome: dict[str, Any] | None,
        log: str,
    ) -> Verdict | None:
        """Why the build failed (None: it did not)."""
        if result.timed_out:
            return Verdict(
                "timeout",
                f"compilation exceeded {self.settings.compile_timeout_s:g} s",
                detail=log[-4000:],
            )
        if outcome is None:
            return crash_verdict(result, "compile")
        wrong = result_malformed(outcome)
        if wrong:  # (the candidate's channel: its doing, never the engine's error)
            return Verdict("hack_suspected", f"the build's result is malformed: {wrong}")
        if outcome["status"] == "ok":
            return None
        errors = compiler_feedback.locate_errors(log, code, work / "ext")
        status = (
            "compile_error"
            if (errors or "Error building extension" in outcome.get("message", ""))
            else outcome["status"]
        )
        message = outcome.get("message", "")
        if status == "compile_error":
            message = "compilation failed:\n" + ("\n".join(errors) or tail_errors(log))
        return Verdict(status, message, detail=outcome.get("detail", ""))

    def _keep(self, work: Path, outcome: dict[str, Any], log: str, target: Path) -> Verdict | None:
        """The built libraries and their log, into the cache under ``target``. The build's
        report of what it built is the worker's word: each library is taken only under a
        plain name, from a regular file inside the build's dir reached through no link (the
        fifth meter red team's a12 named files anywhere, and names with ``..``, and the engine
        copied one into the candidate's reach and wrote another outside its cache); anything
        else is the candidate's failure."""
        take_ownership(work)
        built = outcome.get("built", {})
        if not isinstance(built, dict):
            return Verdict("hack_suspected", "the build's report of what it built is not a map")
        if len(built) > LIBRARIES_MAX:
            return Verdict(
                "hack_suspected",
                f"the build's report names {len(built)} libraries (at most {LIBRARIES_MAX})",
            )
        kept = work / "kept"
        kept.mkdir()
        root = os.path.realpath(work)
        left = LIBRARIES_MAX_BYTES
        for name, so in built.items():
            path = os.path.abspath(so) if isinstance(so, str) else ""
            inside = bool(path) and os.path.commonpath([root, os.path.realpath(path)]) == root
            try:
                if not (isinstance(name, str) and LIBRARY_NAME.fullmatch(name) and inside):
                    raise worker_files.Unfit("not a library of this build")
                if os.path.realpath(path) != path:
                    raise worker_files.Unfit("reached through a link")
                limit = min(LIBRARY_MAX_BYTES, left)
                left -= worker_files.copy_file(path, kept / f"{name}.so", limit)
            except OSError as exc:
                return Verdict(
                    "hack_suspected",
                    f"the build's report names {str(name)[:80]!r} at {str(so)[:200]!r}, which "
                    f"is not a library it built, or too large a one ({exc})",
                )
        (kept / "build.log").write_text(log[-200_000:])
        (kept / "built.json").write_text(json.dumps(sorted(built)))
        cache.publish(kept, target)
        cache.prune(self.cache / "builds", self.settings.cache_max_mb << 20)

    def triton_cache(self, code: str) -> Path | None:
        """Where Triton's compiled kernels of exactly this code are kept between evaluations.
        Keyed by the code (like the extension builds): what a candidate leaves there is only
        ever read by the same candidate, so no candidate can plant kernels for another."""
        if self.settings.device != "cuda" or "triton" not in code:
            return None
        return self.cache / "triton" / self.key(code)

    async def compiled_baseline(
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
            [spec.digest, s.size, ref_meta.get("sizes"), s.device, torch_tag(), INDUCTOR_ENV],
            sort_keys=True,
        )
        key = hashlib.sha256(text.encode()).hexdigest()[:24]
        target = self.cache / "inductor" / key
        lock = self._locks.setdefault(f"inductor-{key}", asyncio.Lock())
        async with lock, shared_lock(self.cache, f"inductor-{key}"):
            if target.is_dir():
                cache.touch(target)
                return target
            if key in self._uncompiled:
                return None
            worker = await self.children.take_worker(gpu)
            try:
                work = worker.work
                give_problem(work, spec, ref_dir)
                job = candidate_job(s, work, "compile", spec, seed, s.trials, ref_meta)
                job["inductor_cache"] = str(work / "inductor-cache")
                job["phase_timeouts"] = {"setup": s.compile_timeout_s}
                result = await worker.run(job, s.compile_timeout_s + s.worker_slack_s)
                made = work / "inductor-cache"
                compiled = (
                    result is not None
                    and (read_json(work / "result.json") or {}).get("status") == "ok"
                    and made.is_dir()
                )
                if compiled:
                    take_ownership(made)
                    cache.publish(made, target)
                    cache.prune(self.cache / "inductor", s.cache_max_mb << 20)
                else:
                    self._uncompiled.add(key)
            finally:
                worker.discard()
            self.children.restock(gpu)  # the candidate's worker, started now
            return target if compiled else None
