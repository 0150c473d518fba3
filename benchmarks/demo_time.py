"""The README demo's wall time, where it goes, and two versions of the code side by side.

Runs ``autocomp-core optimize examples/demo.toml`` as a user does (a fresh process, the
embedded model), ``--repeat`` times per version, the versions in turn so that a machine
whose load changes treats them alike. Per run: wall and CPU seconds (the run, its model
server and its evaluations), the load average before it, and from its journal and log
where the seconds went:

  llm         the first LLM request out to the last answer in (the model server answers
              one request at a time: prompt tokens evaluated, tokens generated)
  rest        the rest: imports, checks, the model server starting, the initial
              program's evaluation before the first request; exports after the last

``--before REV`` runs the engine of git revision REV and its ``examples/demo.toml`` (a
worktree in a temporary directory, the run's working directory and first on ``PYTHONPATH``;
plugins and the virtual environment are this checkout's) beside this working tree's;
without it, only this working tree runs. Each version is checked to import its own engine
(``python -m`` puts the working directory ahead of ``PYTHONPATH``: a run started in this
checkout imports this checkout's engine, whatever ``PYTHONPATH`` says).

``--start-only`` stops each run at its first LLM request (``budget.llm_calls = 0``): the
start alone, seconds instead of a minute, so that more pairs fit between the changes of
a shared machine's load.

    python benchmarks/demo_time.py [--before REV] [--repeat 3] [--start-only] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STARTED = re.compile(r"^(\S+) \[info\s*\] llm\.local_server_started .*startup_s=([\d.]+)", re.M)


def engine_env(engine: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if engine is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(engine), env.get("PYTHONPATH")]))
    return env


def check_engine(engine: Path | None) -> None:
    """Stop unless a run of this version imports the engine of ``engine`` (or this checkout)."""
    where = subprocess.run(
        [sys.executable, "-c", "import autocomp_core; print(autocomp_core.__file__)"],
        capture_output=True,
        text=True,
        env=engine_env(engine),
        cwd=engine or ROOT,
        check=True,
    ).stdout.strip()
    if not Path(where).is_relative_to(engine or ROOT):
        raise SystemExit(f"a run of {engine or ROOT} imports the engine at {where}")


def demo_run(engine: Path | None, run_dir: Path, start_only: bool = False) -> dict:
    """One demo run; ``engine``: a checkout whose ``autocomp_core`` is imported first."""
    env = engine_env(engine)
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autocomp_core.cli",
            "optimize",
            str((engine or ROOT) / "examples" / "demo.toml"),
            "--set",
            f"run_dir={str(run_dir)!r}",
            "--set",
            "playbook.enabled=false",  # timed runs neither read nor write the user's playbook
            *(["--set", "budget.llm_calls=0"] if start_only else []),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=engine or ROOT,  # python -m imports from the working directory first
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the server is reaped by then
    if done.returncode != 0:
        raise SystemExit(f"the demo failed:\n{done.stderr[-3000:]}")
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        calls = [
            (created, json.loads(response))
            for created, response in db.execute("SELECT created, response FROM llm_calls")
        ]
    server = STARTED.search(done.stderr)
    run = {
        "load": round(load, 2),
        "wall_s": round(wall, 2),
        "cpu_s": round((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), 2),
        "server_start_s": float(server.group(2)) if server else None,
    }
    if not calls:  # --start-only
        return run
    # the journal's clock alone (a virtual machine's wall clock may jump between clocks)
    first_out = min(created - r["duration_s"] for created, r in calls)
    last_in = max(created for created, _ in calls)
    return {
        **run,
        "llm_s": round(last_in - first_out, 2),
        "rest_s": round(wall - (last_in - first_out), 2),
        "llm_calls": len(calls),
        "prompt_tokens": sum(r["usage"]["input_tokens"] for _, r in calls),
        "generated_tokens": sum(r["usage"]["output_tokens"] for _, r in calls),
    }


def worktree(rev: str, where: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev],
        check=True,
        capture_output=True,
    )
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run the engine of this revision")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--start-only", action="store_true", help="stop at the first LLM call")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="demo-time-") as tmp:
        versions: dict[str, Path | None] = {"current": None}
        if args.before:
            versions = {"before": worktree(args.before, Path(tmp) / "before"), **versions}
        runs: dict[str, list[dict]] = {name: [] for name in versions}
        try:
            for engine in versions.values():
                check_engine(engine)
            for i in range(args.repeat):
                for name, engine in versions.items():
                    run = demo_run(engine, Path(tmp) / f"{name}-{i}", args.start_only)
                    runs[name].append(run)
                    if not args.json:
                        stamp = datetime.now().strftime("%H:%M:%S")
                        print(f"{stamp} {name:8} {json.dumps(run)}", flush=True)
        finally:
            if args.before:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", versions["before"]],
                    capture_output=True,
                )
    if args.json:
        print(json.dumps({"cores": os.cpu_count(), "runs": runs}, indent=2))
        return
    keys = ["wall_s", "cpu_s", "server_start_s", "llm_s", "rest_s", "load"]
    print(f"\nmedians of {args.repeat} runs on {os.cpu_count()} cores (load: 1-minute average)")
    print(f"{'':16}" + "".join(f"{name:>12}" for name in runs))
    for key in keys:
        cells = []
        for name in runs:
            values = [r[key] for r in runs[name] if r.get(key) is not None]
            cells.append(f"{statistics.median(values):12.2f}" if values else f"{'-':>12}")
        print(f"{key:16}" + "".join(cells))
    if not args.start_only:
        tokens = {n: (r[0]["prompt_tokens"], r[0]["generated_tokens"]) for n, r in runs.items()}
        print("prompt/generated: " + ", ".join(f"{n} {p}/{g}" for n, (p, g) in tokens.items()))


if __name__ == "__main__":
    main()
