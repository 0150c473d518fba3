"""The runs an agent starts through the MCP server.

Each run is an ordinary ``autocomp-core optimize`` (or ``resume``) process of its own, in a
session of its own: the same run directory, journal, budgets, exports and dashboard as a
run started from a shell, and it goes on when the client or the server goes away (its
budgets end it; ``stop`` or ``kill -INT PID`` stop it). A run's id is its run directory.
Stopping sends SIGINT, which the command handles as Ctrl-C: the journal keeps every
answered call and finished evaluation, and ``resume`` continues the run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import tomli_w

from ..config import merge_config
from ..errors import AutocompError, ConfigError
from ..ledger.store import RunStore
from ..report.data import find_runs, run_data, run_row
from ..run.runner import RESUME_OVERRIDABLE, default_run_dir, free_name, prepare

#: what a run's process printed (its errors, should it fail before its journal says why)
LOG_NAME = "mcp-run.log"
#: the configuration the client asked for, as the run's process reads it
REQUEST_NAME = "mcp-request.toml"
#: how long ``stop`` waits for the run to save its state and exit
STOP_WAIT_S = 60.0
#: what ``runs_in`` says of each run
LISTED = (
    "run",
    "state",
    "backend",
    "problem",
    "iterations_done",
    "iterations_total",
    "best_score",
    "unit",
    "speedup",
    "cost_usd",
    "updated",
)
#: the command a run's process runs: this interpreter's ``autocomp-core``
COMMAND = [sys.executable, "-m", "autocomp_core.cli"]


class Runs:
    """The runs of one server: those it started (their processes, reaped here) and any
    other run directory a client names."""

    def __init__(self) -> None:
        self.processes: dict[Path, subprocess.Popen[bytes]] = {}

    async def start(
        self, config_path: str | None, config: dict[str, Any] | None, overrides: list[str]
    ) -> dict[str, Any]:
        """Check the configuration as ``optimize`` does (nothing is spent on bad input),
        then start the run in the background; returns its id at once."""
        if not config_path and not config:
            raise ConfigError("config: give config_path (a TOML file) or config (a table)")
        data = merge_config(config_path, config or {}, overrides)
        prep = await anyio.to_thread.run_sync(prepare, data)
        cfg = prep.config
        run_dir = Path(cfg.run_dir) if cfg.run_dir else free_name(default_run_dir(cfg))
        run_dir = run_dir.expanduser().absolute()
        if RunStore.exists(run_dir) or run_dir in self.processes:
            raise ConfigError(f"run_dir: {run_dir} already holds a run (use resume_run)")
        try:
            request = tomli_w.dumps({**data, "run_dir": str(run_dir)})
        except TypeError as exc:  # a JSON null has no TOML form
            raise ConfigError(f"config: {exc}") from None
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / REQUEST_NAME).write_text(request)
        self._spawn(run_dir, ["optimize", str(run_dir / REQUEST_NAME)])
        return self.status(str(run_dir))

    def resume(self, run: str, overrides: list[str]) -> dict[str, Any]:
        run_dir = self.find(run)
        pid = self.running_pid(run_dir)
        if pid is not None:
            raise ConfigError(f"run {run_dir} is running (pid {pid}); stop it first")
        for item in overrides:
            if not item.strip().startswith(RESUME_OVERRIDABLE):
                raise ConfigError(
                    f"overrides: {item.split('=')[0]}: resume may only change "
                    "budget.*, llm.*, evaluation.* and executor.*"
                )
        sets = [arg for item in overrides for arg in ("--set", item)]
        self._spawn(run_dir, ["resume", str(run_dir), *sets])
        return self.status(str(run_dir))

    async def stop(self, run: str) -> dict[str, Any]:
        """SIGINT, as Ctrl-C: the run saves its state and exits; its status after."""
        run_dir = self.find(run)
        pid = self.running_pid(run_dir)
        if pid is None:
            raise ConfigError(f"run {run_dir} is not running ({self.status(run)['state']})")
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + STOP_WAIT_S
        while self.running_pid(run_dir) is not None and time.monotonic() < deadline:
            await anyio.sleep(0.2)
        return self.status(run)

    def status(self, run: str) -> dict[str, Any]:
        """State (starting, running, crashed, failed, or why the run stopped), progress,
        best score and speedup, spending; ``error``: the last line the process printed when
        it failed."""
        run_dir = self.find(run)
        process = self.processes.get(run_dir)
        code = process.poll() if process is not None else None  # reaped before reading
        out: dict[str, Any] = {"run": str(run_dir)}
        data = self._journal(run_dir, process, code)
        if data is None:  # a process of ours that has not journaled yet
            assert process is not None
            state = "starting" if code is None else "interrupted" if code == 130 else "failed"
            out.update(state=state, pid=process.pid)
        else:
            out.update(run_row(data))
            out.update(
                llm_calls=data["summary"]["llm_calls"],
                evaluations=data["summary"]["evaluations"],
                best_candidate=data["summary"]["best_id"],
            )
            out.pop("name", None)
            summary = _summary(run_dir)
            if summary.get("stop_detail"):
                out["stop_detail"] = summary["stop_detail"]
            pid = self.running_pid(run_dir)
            if pid is not None:
                out["pid"] = pid
            if code is None and process is not None and out["state"] != "running":
                out["state"] = "starting"  # our process has not opened its session yet
        if process is not None and code is not None:
            out["exit_code"] = code
            if code not in (0, 130) or out["state"] in ("failed", "crashed"):
                out["error"] = _last_line(run_dir / LOG_NAME)
        return out

    def _journal(
        self, run_dir: Path, process: subprocess.Popen[bytes] | None, code: int | None
    ) -> dict[str, Any] | None:
        """What the run's journal says; None while a process of ours has not written it
        (``find`` names only runs or processes of ours)."""
        if not RunStore.exists(run_dir):
            return None
        try:
            return run_data(run_dir)
        except (sqlite3.Error, OSError) as exc:  # a journal being created
            if process is not None and code is None:
                return None
            raise AutocompError(f"run {run_dir}: its journal cannot be read: {exc}") from None

    def best(self, run: str) -> dict[str, Any]:
        run_dir = self.find(run)
        process = self.processes.get(run_dir)
        data = self._journal(run_dir, process, process.poll() if process else None)
        if data is None:
            raise AutocompError(f"run {run_dir} has not started yet; poll run_status")
        best_id = data["summary"]["best_id"]
        if best_id is None:
            raise AutocompError(
                f"run {run_dir} has no correct program yet ({data['status']['state']})"
            )
        node = next(n for n in data["candidates"] if n["id"] == best_id)
        return {
            "run": str(run_dir),
            "candidate": best_id,
            "baseline": node["origin"] == "root",
            "iteration": node["iteration"],
            "plan": node["plan"],
            "score": node["score"],
            "unit": data["target"].get("unit"),
            "initial_score": data["summary"]["initial_score"],
            "speedup": data["summary"]["speedup"],
            "state": data["status"]["state"],
            "code": data["codes"][node["code"]],
        }

    def report(self, run: str) -> str:
        run_dir = self.find(run)
        try:
            return (run_dir / "report.md").read_text()
        except FileNotFoundError:
            state = self.status(run)["state"]
            raise AutocompError(
                f"run {run_dir} has no report yet ({state}; it is written after each iteration)"
            ) from None

    def runs_in(self, folder: str) -> dict[str, Any]:
        """The runs at or below ``folder`` (a run, a folder of runs, a suite), newest
        first: each one's directory and what ``status`` says of it, in short."""
        root = Path(folder).expanduser().absolute()
        if not root.is_dir():
            raise ConfigError(f"folder: {root} is not a directory")
        rows = []
        for run_dir in find_runs(root):
            status = self.status(str(run_dir))
            rows.append({k: status.get(k) for k in LISTED})
        rows.sort(key=lambda row: row["updated"] or 0, reverse=True)
        return {"folder": str(root), "runs": rows}

    def find(self, run: str) -> Path:
        """The run directory ``run`` names: one holding a journal, or one a process of this
        server is starting."""
        run_dir = Path(run).expanduser().absolute()
        if not RunStore.exists(run_dir) and run_dir not in self.processes:
            raise ConfigError(f"run: no run at {run_dir} (no run.sqlite there)")
        return run_dir

    def running_pid(self, run_dir: Path) -> int | None:
        """The process running ``run_dir``: ours, or the live process of the journal's last
        session on this host (a run started from a shell, or by an earlier server)."""
        process = self.processes.get(run_dir)
        if process is not None and process.poll() is None:
            return process.pid
        if not RunStore.exists(run_dir):
            return None
        try:
            store = RunStore(run_dir, readonly=True)
            try:
                sessions = [e for e in store.events() if e["event"].startswith("session_")]
            finally:
                store.close()
        except sqlite3.Error:  # a journal being created: no session has started yet
            return None
        last = sessions[-1] if sessions else None
        if last is None or last["event"] != "session_start":
            return None
        if last.get("host") != socket.gethostname() or not _is_autocomp(int(last["pid"])):
            return None
        return int(last["pid"])

    def _spawn(self, run_dir: Path, args: list[str]) -> None:
        """``autocomp-core ARGS --quiet`` in a session of its own, output to the run's log."""
        with (run_dir / LOG_NAME).open("ab") as log:
            self.processes[run_dir] = subprocess.Popen(
                [*COMMAND, *args, "--quiet"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # no signal of the client's terminal reaches it
            )


def _is_autocomp(pid: int) -> bool:
    """Whether ``pid`` is a live autocomp process (not another that reused the number)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: not ours to stop
        return False
    try:
        return b"autocomp" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc (macOS): the live process is taken as the run's
        return True


def _summary(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return {}


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""
