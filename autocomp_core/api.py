"""The Python API: ``optimize(config)`` and ``await optimize_async(config)``.

``config`` is a ``RunConfig``, a dict shaped like the TOML file, or a path to one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .config import RunConfig, load_config
from .run.runner import (
    RunSummary,
    optimize as _optimize,
    optimize_async as _optimize_async,
    replay_async,
    resume_async,
)

__all__ = ["RunSummary", "optimize", "optimize_async", "replay_async", "resume_async"]


def _coerce(config: RunConfig | dict[str, Any] | str | Path) -> RunConfig | dict[str, Any]:
    return load_config(config) if isinstance(config, (str, Path)) else config


async def optimize_async(
    config: RunConfig | dict[str, Any] | str | Path,
    run_dir: str | Path | None = None,
    progress: bool = False,
) -> RunSummary:
    return await _optimize_async(_coerce(config), run_dir, progress)


def optimize(
    config: RunConfig | dict[str, Any] | str | Path,
    run_dir: str | Path | None = None,
    progress: bool = False,
) -> RunSummary:
    return _optimize(_coerce(config), run_dir, progress)
