"""Helpers shared by the report tests (imported by name: conftest puts this folder on
the path)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from autocomp_core.testing.llm_server import LLMTestServer


def toy_run_config(
    server: LLMTestServer, run_dir: Path, problem: str = "sum_squares", **search
) -> dict:
    return {
        "backend": "toy",
        "problem": problem,
        "seed": 7,
        "run_dir": str(run_dir),
        "models": {"plan": [f"openai-compatible@{server.openai_base_url}::scripted"]},
        "search": {
            "iterations": 3,
            "beam_size": 2,
            "plans_per_candidate": 3,
            "codes_per_plan": 2,
            "repair_failed": True,
            **search,
        },
        "llm": {"max_retries": 1, "timeout_s": 30},
        # the fixtures' runs (a suite of them) must not learn from each other: their prompts,
        # and so the scripted model's answers, would depend on which finished first
        "playbook": {"enabled": False},
    }


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every file below ``folder`` with its size, time and content hash."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            st = path.stat()
            out[str(path.relative_to(folder))] = (
                st.st_size,
                st.st_mtime_ns,
                hashlib.sha256(path.read_bytes()).hexdigest(),
            )
    return out
