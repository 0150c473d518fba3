"""Reference outputs: computed once per (problem, seed, sizes) by a reference server (a
sandboxed worker kept for many problems), then cached in ``refs/`` where no candidate's
worker can read them."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
from pathlib import Path
from typing import Any

from .. import cache, input_plan
from ..problemset import HELD_COPIES, ProblemSpec
from ..workers import ReferenceServer
from .children import Children
from .files import keep_tree, read_json, shared_lock, take_ownership, torch_tag
from .settings import Settings

#: Bumped when the reference files change layout (older cached references are not read).
#: 6: the buffers a forward updates, after trial 0 (buffers_0.pt); constant weights re-drawn
#: for every problem; 7: a shrunk batch stays at 2 where other sizes can shrink instead
REFERENCE_FORMAT = 7


class ProblemRefused(RuntimeError):
    """The problem cannot run here (not the candidate's fault); the message is one line.
    ``reason``: cannot_shrink, too_big, import_error or reference_too_slow."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def trial_seeds(seed: int, trials: int) -> list[int]:
    rng = random.Random(seed * 7919 + 17)
    return [rng.getrandbits(31) for _ in range(trials)]


class References:
    def __init__(self, cache_dir: Path, settings: Settings, children: Children) -> None:
        self.cache = cache_dir
        self.settings = settings
        self.children = children
        self.servers: list[ReferenceServer] = []  # idle reference servers, kept
        self._locks: dict[str, asyncio.Lock] = {}
        # reference children (each imports torch and runs on every core): one per core at a
        # time, however many problems are checked at once
        self._slots = asyncio.Semaphore(max(1, os.cpu_count() or 1))

    def _key(self, spec: ProblemSpec, seed: int) -> str:
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
                torch_tag(),
                REFERENCE_FORMAT,
                spec.sizes(s.size),
                spec.shrink_budget(s.size),
                spec.off_distribution,
            ]
        )
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    async def get(
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
        base = self._key(spec, seed) + (
            ""
            if sizes is None
            else "-" + hashlib.sha256(json.dumps(sizes).encode()).hexdigest()[:8]
        )
        key = base + ("-gate" if gate else "")
        lock = self._locks.setdefault(base, asyncio.Lock())
        async with lock, shared_lock(self.cache, f"ref-{base}"):
            # the gate's references hold the same
            for found in [key] if gate else [key, base + "-gate"]:
                kept = self._cached(found)
                if kept is not None:
                    return kept
            return await self._compute(spec, seed, gate, sizes, self.cache / "refs" / key)

    def _cached(self, key: str) -> tuple[Path, dict[str, Any]] | None:
        meta_path = self.cache / "refs" / key / "meta.json"
        if not meta_path.exists():
            return None
        cache.touch(meta_path.parent)
        meta = json.loads(meta_path.read_text())
        if meta.get("status") == "refused":
            raise ProblemRefused(meta["error"], meta["reason"])
        return meta_path.parent, meta

    def _job(
        self, spec: ProblemSpec, seed: int, gate: bool, sizes: dict[str, Any] | None
    ) -> dict[str, Any]:
        return {
            "problem": {
                "overrides": spec.sizes(self.settings.size) if sizes is None else sizes,
                "id": spec.id,
            },
            # a problem with no tiny sizes of its own (an imported one) is shrunk to fit the CPU
            "shrink": spec.shrink_budget(self.settings.size) if sizes is None else None,
            "shrink_fallback": spec.shrink_fallback(self.settings.size) if sizes is None else None,
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

    async def _compute(
        self,
        spec: ProblemSpec,
        seed: int,
        gate: bool,
        sizes: dict[str, Any] | None,
        target: Path,
    ) -> tuple[Path, dict[str, Any]]:
        job = self._job(spec, seed, gate, sizes)
        wall_s = self.settings.correctness_timeout_s * (3 if gate else 2)
        async with self._slots:
            server, how, stderr = await self._serve(spec, job, wall_s)
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
                    take_ownership(out)
                    keep_tree(out, target)
                raise ProblemRefused(meta["error"], meta["reason"])
            if meta.get("status") != "ok":
                raise RuntimeError(
                    f"reference for {spec.id} failed: {meta.get('error')}\n{meta.get('traceback', '')}"
                )
            take_ownership(out)
            cache.publish(out, target)
            cache.prune(self.cache / "refs", self.settings.cache_max_mb << 20)
        finally:
            server.finish()
            await self._keep_server(server, how)
        return target, meta

    async def _take_server(self) -> ReferenceServer:
        while self.servers:
            server = self.servers.pop()
            if server.usable():
                return server
            if server.loop is asyncio.get_running_loop():
                await server.close()
        return self.children.reference_server()

    async def _keep_server(self, server: ReferenceServer, how: str) -> None:
        """Back to the pool after a job it finished, unless workers are not kept warm."""
        if how == "done" and self.settings.warm_workers and server.usable():
            self.servers.append(server)
        elif server.loop is asyncio.get_running_loop():
            await server.close()

    async def _serve(
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
            status = (read_json(out_dir / "meta.json") or {}).get("status")
            if fresh or how == "timeout" or (how == "done" and status == "ok"):
                return server, how, stderr
            server.finish()
            await server.close()  # its process state is suspect: never reused
            server = self.children.reference_server()

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

    async def close(self) -> None:
        servers, self.servers = self.servers, []
        for server in servers:
            if server.loop is asyncio.get_running_loop():
                await server.close()
