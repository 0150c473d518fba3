"""The harness's sandboxed children: the environment and limits each gets, the preload
server they are forked from, and the standby candidate worker kept per device slot.

Every child is shown the harness's cache (reference outputs included) as an empty dir where
the sandbox has namespaces (``hidden``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from autocomp_core import (
    PreloadServer,
    SandboxLimits,
    SandboxResult,
    child_import_path,
    run_sandboxed,
)

import autocomp_cuda

from ..workers import CANDIDATE_MAIN, REFERENCE_MAIN, ReferenceServer, Worker
from .settings import INDUCTOR_ENV, Settings


class Children:
    def __init__(self, settings: Settings, hidden: list[Path]) -> None:
        self.settings = settings
        self.hidden = hidden
        self.standby: dict[int | None, Worker] = {}  # per device slot

    def env(self, gpu: int | None) -> dict[str, str]:
        env = {
            "PYTHONDONTWRITEBYTECODE": "1",
            "MAX_JOBS": str(max(1, os.cpu_count() or 1)),
            # where this process imports the plugin and the core from (a checkout passed on)
            "PYTHONPATH": child_import_path(autocomp_cuda),
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

    def judge_env(self, gpu: int | None) -> dict[str, str]:
        """The judge is ours (not sandboxed), but it still gets only what it needs."""
        env = {
            key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ
        }
        return {**env, **self.env(gpu)}

    def limits(self, wall_s: float) -> SandboxLimits:
        return SandboxLimits(
            wall_s=wall_s,
            memory_mb=self.settings.memory_mb if self.settings.device == "cpu" else None,
            file_size_mb=4096,
            disk_mb=self.settings.disk_mb,
            max_processes=512,
            max_output_bytes=2_000_000,
        )

    def preload(self, gpu: int | None) -> PreloadServer | None:
        """The server the workers of this device slot (candidates' and references') are forked
        from, torch imported."""
        if not self.settings.preload_workers:
            return None
        return PreloadServer.shared([CANDIDATE_MAIN, REFERENCE_MAIN], self.env(gpu))

    async def run(
        self, module: str, job: dict[str, Any], work: Path, wall_s: float
    ) -> SandboxResult:
        """One child of ``autocomp_cuda.runtime.<module>`` on ``job``, in ``work``, to its end."""
        (work / "job.json").write_text(json.dumps(job))
        return await run_sandboxed(
            [sys.executable, "-m", f"autocomp_cuda.runtime.{module}", str(work / "job.json")],
            limits=self.limits(wall_s),
            cwd=work,
            env=self.env(None),
            hidden=self.hidden,
            preload=self.preload(None),
        )

    def start_worker(self, gpu: int | None) -> Worker:
        return Worker(
            self.env(gpu),
            self.limits(self.settings.eval_deadline_s()),
            self.settings.standby_idle_s,
            hidden=self.hidden,
            preload=self.preload(gpu),
        )

    async def take_worker(self, gpu: int | None) -> Worker:
        """The slot's standby worker if it can still take a job, else a new one."""
        worker = self.standby.pop(gpu, None)
        if worker is not None:
            if worker.usable():
                return worker
            if worker.loop is asyncio.get_running_loop():
                await worker.close()
        return self.start_worker(gpu)

    def restock(self, gpu: int | None) -> None:
        """A new standby worker for the slot, when workers are kept warm."""
        if self.settings.warm_workers:
            self.standby[gpu] = self.start_worker(gpu)

    def reference_server(self) -> ReferenceServer:
        return ReferenceServer(
            self.env(None),
            self.limits(self.settings.correctness_timeout_s * 3),
            self.settings.standby_idle_s,
            hidden=self.hidden,
            preload=self.preload(None),
        )
