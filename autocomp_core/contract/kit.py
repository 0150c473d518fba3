"""The plugin author's kit: what every evaluator needs and would otherwise write again.

- ``child_import_path``: the ``PYTHONPATH`` a child interpreter needs to import the plugin
  and the core the way this process does (a checkout on ``PYTHONPATH`` passed on);
- ``last_json_line``: the report a child prints last, as a JSON object;
- ``run_failure``: how a sandboxed run ended badly, as a failure kind and one line;
- ``EvaluationRecord``: an evaluation's steps timed into ``EvalResult.extra`` and what it
  verified into ``EvalResult.verification``, so a failed evaluation still says what passed;
- ``applying_limits`` and ``limits_section``: the known blind spots of a backend's model that
  apply to one program, and the feedback's section naming them.

All of it is importable from ``autocomp_core``; the ``new-backend`` template uses it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from ..sandbox import SandboxResult
from .backend import EvalResult, FailureKind

#: how much of a failed run's output a failure message ends with
OUTPUT_TAIL_CHARS = 1500


def child_import_path(*packages: ModuleType) -> str:
    """A ``PYTHONPATH`` from which a child interpreter imports ``packages`` and the core from
    where this process imports them, then whatever this process's ``PYTHONPATH`` holds; each
    folder once, in that order. Installed packages need none of it; a checkout does."""
    core = str(Path(__file__).resolve().parents[2])  # the folder autocomp_core/ lies in
    roots = [*(_import_root(p) for p in packages), core]
    roots += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(roots))


def _import_root(package: ModuleType) -> str:
    if package.__file__ is None:
        raise ValueError(f"{package.__name__} has no file to import it from")
    return str(Path(package.__file__).resolve().parent.parent)


def last_json_line(text: str) -> dict[str, Any] | None:
    """The last line of ``text`` that starts a JSON object, parsed; None when there is none or
    it does not parse. A child's own prints come before its report, so only the last counts:
    an earlier line that looks like a report is never taken instead."""
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def run_failure(
    run: SandboxResult, what: str, limit_s: float | None = None
) -> tuple[FailureKind, str] | None:
    """None when ``run`` ended well (exit 0 within its time); else ``TIMEOUT`` or ``CRASH``
    with one line saying how ``what`` ended (``limit_s``: the time limit it was given),
    followed by the tail of its output."""
    if run.ok:
        return None
    if run.timed_out:
        limit = f"{limit_s:.0f} s limit" if limit_s is not None else "time limit"
        return FailureKind.TIMEOUT, f"{what} ran past its {limit} and was killed"
    how = (
        f"was killed by signal {run.signal}"
        if run.signal
        else f"exited with status {run.returncode}"
    )
    tail = (run.stderr or run.stdout or "").strip()[-OUTPUT_TAIL_CHARS:]
    return FailureKind.CRASH, f"{what} {how}" + (f":\n{tail}" if tail else "")


class EvaluationRecord:
    """What one evaluation did, filled in step by step: ``extra`` holds each timed step's
    seconds (``<step>_s``) and any numbers a step adds; ``verification`` holds the seeds and
    shapes it used and the checks it passed, in order. ``result`` makes the ``EvalResult``,
    so a failure reports what passed before it."""

    def __init__(self, seeds: Any = None, shapes: Any = None) -> None:
        self.started = time.perf_counter()
        self.extra: dict[str, float] = {}
        self.checks: list[str] = []
        self.verification: dict[str, Any] = {}
        if seeds is not None:
            self.verification["seeds"] = seeds
        if shapes is not None:
            self.verification["shapes"] = shapes
        self.verification["checks"] = self.checks

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Times the block into ``extra["<step>_s"]`` when it completes (a step that raises
        records no time: it did not finish)."""
        started = time.perf_counter()
        yield
        self.extra[f"{step}_s"] = time.perf_counter() - started

    def passed(self, *checks: str) -> None:
        """Checks the program passed, each in a line a reviewer can read."""
        self.checks.extend(checks)

    def result(self, correct: bool, **fields: Any) -> EvalResult:
        """The ``EvalResult`` with this record's ``extra``, ``verification`` and the time since
        the record began (``duration_s``) unless given."""
        fields.setdefault("duration_s", time.perf_counter() - self.started)
        extra = {**self.extra, **fields.pop("extra", {})}
        return EvalResult(correct=correct, extra=extra, verification=self.verification, **fields)


#: a model limit: its name, and a detector that says in one line how the limit applies to the
#: program at hand (None when it does not)
ModelLimit = tuple[str, Callable[..., str | None]]


def applying_limits(limits: Iterable[ModelLimit], *facts: Any) -> list[dict[str, str]]:
    """The limits whose detector, given ``facts`` (what the model measured of the program),
    says they apply: ``[{"limit": name, "detail": one line}, ...]`` in the order given."""
    found = []
    for name, detect in limits:
        detail = detect(*facts)
        if detail:
            found.append({"limit": name, "detail": detail})
    return found


def limits_section(limits: list[dict[str, str]]) -> str:
    """The feedback's section on the limits that apply ('' when none does)."""
    if not limits:
        return ""
    lines = [
        "Model limits that apply to this program (where the modelled number is least certain):"
    ]
    return "\n".join([*lines, *(f"- {item['detail']}" for item in limits)])
