"""The run store: one SQLite file (WAL) per run directory that journals everything.

Every LLM request and its response, every candidate with its lineage, every
evaluation, every finished iteration's beam and every notable event is written the
moment it happens, so a crash or SIGKILL loses at most what was in flight. Resume
re-runs the search over this journal: answered LLM calls and finished evaluations are
read back instead of repeated.
"""

from __future__ import annotations

import enum
import json
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import ConfigError

#: The journal's schema as an ordered list of migrations. ``PRAGMA user_version`` counts
#: those applied; opening a journal applies the rest, in order, each in one transaction.
#: Append a migration to change the schema; never edit one that has shipped.
MIGRATIONS: tuple[str, ...] = (
    # 1: the tables (journals written before versioning have them, at user_version 0)
    """
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS llm_calls (
        key TEXT PRIMARY KEY, model TEXT NOT NULL, phase TEXT NOT NULL, ok INTEGER NOT NULL,
        request TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS candidates (
        id TEXT PRIMARY KEY, iteration INTEGER NOT NULL, parents TEXT NOT NULL,
        origin TEXT NOT NULL, plan TEXT, code TEXT, code_hash TEXT, plan_model TEXT,
        code_model TEXT, score REAL, eval_key TEXT, translation_score REAL,
        created REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS evaluations (
        key TEXT PRIMARY KEY, result TEXT NOT NULL, created REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS beams (
        iteration INTEGER NOT NULL, position INTEGER NOT NULL, candidate TEXT NOT NULL,
        PRIMARY KEY (iteration, position));
    CREATE TABLE IF NOT EXISTS iterations (
        iteration INTEGER PRIMARY KEY, stats TEXT NOT NULL, finished REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS events (
        id INTEGER PRIMARY KEY AUTOINCREMENT, ts REAL NOT NULL, kind TEXT NOT NULL,
        data TEXT NOT NULL);
    """,
    # 2: the lookups readers repeat while a run goes on (events of a kind, an iteration's
    # candidates) by index instead of by scanning
    """
    CREATE INDEX IF NOT EXISTS events_by_kind ON events (kind, id);
    CREATE INDEX IF NOT EXISTS candidates_by_iteration ON candidates (iteration, created);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

DB_NAME = "run.sqlite"

#: the event journaled for each attempt of an evaluation lost with its worker or node
#: (``key``, ``attempt``, ``node_id``, ``node_ip``, ``reason``)
ATTEMPT_LOST = "evaluation_lost"
#: the event journaled for an evaluation that ended in an ``infra_error`` (lost on every
#: attempt, or its evaluator failed: the machine's failure, not the program's) with its
#: result (``key``, ``result``); never reused: a resumed run evaluates the program again
INFRA_ERROR = "evaluation_infra_error"
#: the event journaled for a held-out check of one candidate (``engine.held_out``):
#: ``candidate``, ``passed``, ``score`` (its metric there), ``search_score``, ``key``, ``reason``
HELD_OUT = "held_out"


class Origin(str, enum.Enum):
    """How a candidate came to be."""

    ROOT = "root"  # the initial program (or, with continue_from, one of another run's)
    PLAN = "plan"  # implements a plan
    DIRECT = "direct"  # written without a planning step
    REPAIR = "repair"  # a failed candidate, repaired with its errors
    COMBINE = "combine"  # two beam members combined
    CONTROL = "control"  # written by the equal-budget control (engine.control), never in a beam
    REUSE = "reuse"  # a donor run's plan applied to this run's program (engine.reuse)


@dataclass
class Candidate:
    """A program in the search, with its lineage. ``score`` is +inf when not correct."""

    id: str
    iteration: int
    parents: list[str]
    origin: Origin
    plan: str | None = None
    code: str | None = None
    code_hash: str | None = None
    plan_model: str | None = None
    code_model: str | None = None
    score: float = float("inf")
    eval_key: str | None = None
    translation_score: float | None = None
    # not persisted as columns: the evaluation's feedback, for prompts
    feedback: str = field(default="", repr=False)
    errors: str = field(default="", repr=False)

    @property
    def correct(self) -> bool:
        return self.score != float("inf")


def best_candidate(
    cands: list[Candidate], drop_root: bool, overfit: Collection[str] = ()
) -> Candidate | None:
    """The run's best program: correct, not ``overfit`` (failed the held-out check)."""
    correct = [c for c in cands if c.correct and c.id not in overfit]
    if any(c.origin != Origin.CONTROL for c in cands):  # the control's programs are its own
        correct = [c for c in correct if c.origin != Origin.CONTROL]
    if drop_root and any(c.origin != "root" for c in correct):
        correct = [c for c in correct if c.origin != "root"]
    return min(correct, key=lambda c: (c.score, c.iteration, c.id)) if correct else None


class RunStore:
    """Thread-safe, autocommitting access to one run's SQLite journal."""

    def __init__(self, run_dir: Path | str, readonly: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / DB_NAME
        self._lock = threading.Lock()
        if readonly:
            self._db = _connect_readonly(self.path)
            try:
                self._check_version(self.version())
            except BaseException:
                self._db.close()
                raise
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except BaseException:
            self._db.close()
            raise

    def version(self) -> int:
        """The journal's schema version (the migrations applied to it)."""
        return self._exec("PRAGMA user_version")[0][0]

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise ConfigError(
                f"run directory {self.run_dir}: its journal has schema version "
                f"{version}, newer than this autocomp-core reads "
                f"({SCHEMA_VERSION}); upgrade autocomp-core to use it"
            )

    def _migrate(self) -> None:
        """Bring the journal to ``SCHEMA_VERSION``, one migration per transaction; refuse a
        journal written by a newer autocomp-core."""
        version = self.version()
        self._check_version(version)
        for number, sql in enumerate(MIGRATIONS[version:], version + 1):
            try:
                self._db.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {number};\nCOMMIT;")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    @classmethod
    def exists(cls, run_dir: Path | str) -> bool:
        return (Path(run_dir) / DB_NAME).exists()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _exec(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Reads inside this block see one consistent state of the journal (a readonly
        store's readers use it while the run goes on writing)."""
        self._db.execute("BEGIN")
        try:
            yield
        finally:
            self._db.execute("COMMIT")

    # -- meta ---------------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        self._exec("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._exec("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    # -- LLM journal --------------------------------------------------------------------
    def record_llm(
        self,
        key: str,
        model: str,
        phase: str,
        ok: bool,
        request: dict[str, Any],
        response: dict[str, Any],
    ) -> None:
        self._exec(
            "INSERT OR REPLACE INTO llm_calls VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, model, phase, int(ok), json.dumps(request), json.dumps(response), time.time()),
        )

    def llm_response(self, key: str) -> dict[str, Any] | None:
        """The recorded response to this request key, answer or failure, if any."""
        rows = self._exec("SELECT response FROM llm_calls WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def llm_calls(self) -> Iterator[dict[str, Any]]:
        for key, model, phase, ok, req, resp, created in self._exec(
            "SELECT * FROM llm_calls ORDER BY created"
        ):
            yield {
                "key": key,
                "model": model,
                "phase": phase,
                "ok": bool(ok),
                "request": json.loads(req),
                "response": json.loads(resp),
                "created": created,
            }

    def llm_usage(self) -> Iterator[dict[str, Any]]:
        """Every journaled call without its prompt and its answer's text (for accounting)."""
        for model, phase, resp, created in self._exec(
            "SELECT model, phase, json_remove(response, '$.text'), created FROM llm_calls "
            "ORDER BY created"
        ):
            yield {"model": model, "phase": phase, "response": json.loads(resp), "created": created}

    # -- candidates ---------------------------------------------------------------------
    def save_candidate(self, c: Candidate) -> None:
        self._exec(
            "INSERT OR REPLACE INTO candidates VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                c.id,
                c.iteration,
                json.dumps(c.parents),
                c.origin,
                c.plan,
                c.code,
                c.code_hash,
                c.plan_model,
                c.code_model,
                None if c.score == float("inf") else c.score,
                c.eval_key,
                c.translation_score,
                time.time(),
            ),
        )

    def candidates(self, iteration: int | None = None) -> list[Candidate]:
        sql = "SELECT * FROM candidates"
        args: tuple = ()
        if iteration is not None:
            sql += " WHERE iteration = ?"
            args = (iteration,)
        return [self._row_to_candidate(r) for r in self._exec(sql + " ORDER BY created", args)]

    def created(self) -> dict[str, float]:
        """Each candidate's creation time (seconds since the epoch), by id."""
        return dict(self._exec("SELECT id, created FROM candidates"))

    def candidate(self, cid: str) -> Candidate | None:
        rows = self._exec("SELECT * FROM candidates WHERE id = ?", (cid,))
        return self._row_to_candidate(rows[0]) if rows else None

    @staticmethod
    def _row_to_candidate(r: tuple) -> Candidate:
        return Candidate(
            id=r[0],
            iteration=r[1],
            parents=json.loads(r[2]),
            origin=Origin(r[3]),
            plan=r[4],
            code=r[5],
            code_hash=r[6],
            plan_model=r[7],
            code_model=r[8],
            score=float("inf") if r[9] is None else r[9],
            eval_key=r[10],
            translation_score=r[11],
        )

    # -- evaluations --------------------------------------------------------------------
    def save_evaluation(self, key: str, result: dict[str, Any]) -> None:
        self._exec(
            "INSERT OR REPLACE INTO evaluations VALUES (?, ?, ?)",
            (key, json.dumps(result), time.time()),
        )

    def evaluation(self, key: str) -> dict[str, Any] | None:
        rows = self._exec("SELECT result FROM evaluations WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None

    def evaluations(self) -> dict[str, tuple[dict[str, Any], float]]:
        """Every evaluation by key, with the time it was recorded (it had just finished)."""
        return {
            key: (json.loads(result), created)
            for key, result, created in self._exec("SELECT * FROM evaluations")
        }

    def infra_errors(self) -> dict[str, dict[str, Any]]:
        """The latest ``infra_error`` result journaled for each evaluation key."""
        return {e["key"]: e["result"] for e in self.events(INFRA_ERROR) if "key" in e}

    def held_out_verdicts(self) -> dict[str, dict[str, Any]]:
        """Candidate id -> its held-out verdict, as journaled."""
        return {e["candidate"]: e for e in self.events(HELD_OUT) if "candidate" in e}

    def overfit(self) -> set[str]:
        """The candidates that passed the search's checks and failed the held-out one."""
        return {cid for cid, v in self.held_out_verdicts().items() if not v["passed"]}

    def evaluations_ended(self) -> int:
        """Evaluations that ran to an end: those with a result and those that ended in an
        infra error (the summary and the report count these)."""
        rows = self._exec("SELECT COUNT(*) FROM events WHERE kind = ?", (INFRA_ERROR,))
        return self.count("evaluations") + rows[0][0]

    def count(self, table: str) -> int:
        assert table in {"llm_calls", "candidates", "evaluations", "events", "iterations"}
        return self._exec(f"SELECT COUNT(*) FROM {table}")[0][0]

    # -- beams and iterations -----------------------------------------------------------
    def save_beam(self, iteration: int, candidate_ids: list[str], stats: dict[str, Any]) -> None:
        """Record a finished iteration atomically: its beam and its statistics."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.execute("DELETE FROM beams WHERE iteration = ?", (iteration,))
                self._db.executemany(
                    "INSERT INTO beams VALUES (?, ?, ?)",
                    [(iteration, k, cid) for k, cid in enumerate(candidate_ids)],
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO iterations VALUES (?, ?, ?)",
                    (iteration, json.dumps(stats), time.time()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def beam(self, iteration: int) -> list[str] | None:
        rows = self._exec(
            "SELECT candidate FROM beams WHERE iteration = ? ORDER BY position", (iteration,)
        )
        return [r[0] for r in rows] if rows else None

    def last_iteration(self) -> int | None:
        rows = self._exec("SELECT MAX(iteration) FROM beams")
        return rows[0][0]

    def iteration_stats(self) -> dict[int, dict[str, Any]]:
        return {
            i: json.loads(s)
            for i, s, _ in self._exec("SELECT * FROM iterations ORDER BY iteration")
        }

    # -- events -------------------------------------------------------------------------
    def event(self, event: str, /, **data: Any) -> None:
        self._exec(
            "INSERT INTO events (ts, kind, data) VALUES (?, ?, ?)",
            (time.time(), event, json.dumps(data, default=str)),
        )

    def events(self, event: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT ts, kind, data FROM events", tuple[str, ...]()
        if event:
            sql, args = sql + " WHERE kind = ?", (event,)
        return [
            {"ts": ts, "event": k, **json.loads(d)}
            for ts, k, d in self._exec(sql + " ORDER BY id", args)
        ]


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """A connection that cannot change the run. While a writer is (or was, before a crash)
    active, the write-ahead log holds the newest state and is read through ``mode=ro``;
    a cleanly closed journal has no log and is opened ``immutable``, so that reading it
    creates no files beside it."""
    if not path.exists():
        raise FileNotFoundError(f"no run journal at {path}")

    def connect(mode: str) -> sqlite3.Connection:
        db = sqlite3.connect(
            f"file:{quote(str(path.resolve()))}?{mode}",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
        )
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
        return db

    if path.with_name(path.name + "-wal").exists():
        try:
            return connect("mode=ro")
        except sqlite3.OperationalError:  # a log left by a crash in a folder we cannot write
            pass
    return connect("immutable=1")
