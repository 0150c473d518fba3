"""Helpers of the engine tests (importable by name: ``tests/engine`` is on the path)."""

from __future__ import annotations

from pathlib import Path


def toy_config(server, tmp_path: Path, **search) -> dict:
    """A small toy run talking to the scripted server."""
    model = f"openai-compatible@{server.openai_base_url}::scripted"
    return {
        "backend": "toy",
        "problem": "sum_squares",
        "seed": 7,
        "run_dir": str(tmp_path / "run"),
        "models": {"plan": [model]},
        "search": {
            "iterations": 2,
            "beam_size": 2,
            "plans_per_candidate": 3,
            "codes_per_plan": 2,
            **search,
        },
        "llm": {"max_retries": 2, "timeout_s": 30},
        # runs of one test would learn from each other: tests of the playbook turn it on
        "playbook": {"enabled": False},
    }
