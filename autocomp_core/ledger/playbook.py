"""The playbook: what finished runs learned, kept across runs in one SQLite file.

Every finished run writes one entry: the problem's features (backend, operator family,
shapes, dtypes), the winning schedule with each step's gain, and the plans that failed with
their failure kind and a short reason. Plans and reasons only: never a program, never a key.
A new run reads the entries nearest its problem (same backend, same family first, then by
shape) and shows its planner what worked and what failed (``engine.lessons``).

The file is one per user (``~/.local/share/autocomp/playbook.sqlite``, or under
``$XDG_DATA_HOME``) unless ``[playbook] path`` or ``AUTOCOMP_PLAYBOOK`` names another (one
per project, say); never inside the package. ``autocomp-core playbook`` lists, shows,
exports, imports and forgets entries; an export is a JSON Lines file a team can share.
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..llm.keys import redact

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, backend TEXT NOT NULL,
    family TEXT NOT NULL, problem TEXT NOT NULL, shapes TEXT NOT NULL, dtypes TEXT NOT NULL,
    run TEXT NOT NULL, speedup REAL, schedule TEXT NOT NULL, failures TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS entries_by_family ON entries (backend, family);
"""
_DIMS = re.compile(r"\d+")
_DTYPES = re.compile(r"\b(fp8|fp16|bf16|fp32|f16|f32|int8|i8|int32|float16|float32|bfloat16)\b")


def default_path() -> Path:
    """``AUTOCOMP_PLAYBOOK``, else the user's data folder."""
    if os.environ.get("AUTOCOMP_PLAYBOOK"):
        return Path(os.environ["AUTOCOMP_PLAYBOOK"]).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(data) / "autocomp" / "playbook.sqlite"


def features(problem_id: str, metadata: dict[str, Any]) -> tuple[str, list[int], list[str]]:
    """(operator family, shapes, dtypes) of a problem: the backend's own where its metadata
    says (``family``, ``shapes``, ``dtypes``), else read from the id (``gemm-64x64x64`` is the
    family ``gemm`` at [64, 64, 64]; ``llama/mlp_decode_b32`` is ``llama/mlp_decode_b``)."""
    family = str(metadata.get("family") or _DIMS.sub("", problem_id).strip("-_x@/ ") or problem_id)
    shapes = metadata.get("shapes") or [int(d) for d in _DIMS.findall(problem_id)]
    dtypes = metadata.get("dtypes") or sorted(set(_DTYPES.findall(problem_id.lower())))
    return family, [int(s) for s in shapes], [str(d) for d in dtypes]


@dataclass
class Entry:
    backend: str
    family: str
    problem: str
    shapes: list[int]
    dtypes: list[str]
    run: str  # the run directory's last two names, for a person (not a path)
    speedup: float | None
    schedule: list[dict[str, Any]]  # {"plan", "gain"} per winning step
    failures: list[dict[str, Any]]  # {"plan", "kind", "reason"} per failed plan
    id: int | None = None
    created: float = field(default_factory=time.time)

    def distance(self, family: str, shapes: list[int]) -> float:
        """How far this entry is from a problem: another family is far; then the mean log
        ratio of the shapes (of what both have), so 64 vs 128 is as near as 512 vs 1024."""
        far = 0.0 if self.family == family else 10.0
        pairs = list(zip(self.shapes, shapes, strict=False))
        if not pairs:
            return far + 1.0
        logs = [abs(math.log(max(a, 1) / max(b, 1))) for a, b in pairs]
        return far + sum(logs) / len(logs) + 0.1 * abs(len(self.shapes) - len(shapes))


class Playbook:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"playbook {self.path}: not a playbook store ({exc})") from None
        except OSError as exc:
            raise ConfigError(f"playbook {self.path}: {exc.strerror}") from None

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        try:
            yield self._db
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"playbook {self.path}: unreadable ({exc})") from None

    def add(self, entry: Entry) -> int:
        """Store an entry (a run's, or an imported one), with every key and anything shaped
        like one scrubbed from its text: plans and failure reasons quote LLM answers and
        feedback, and an export is shared."""

        def scrub(item: dict[str, Any]) -> dict[str, Any]:
            return {k: redact(v) if isinstance(v, str) else v for k, v in item.items()}

        row = scrub(asdict(entry))
        row["schedule"] = [scrub(step) for step in entry.schedule]
        row["failures"] = [scrub(fail) for fail in entry.failures]
        with self._reading() as db:
            cur = db.execute(
                "INSERT INTO entries (created, backend, family, problem, shapes, dtypes, run, "
                "speedup, schedule, failures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    row["created"],
                    row["backend"],
                    row["family"],
                    row["problem"],
                    json.dumps(row["shapes"]),
                    json.dumps(row["dtypes"]),
                    row["run"],
                    row["speedup"],
                    json.dumps(row["schedule"]),
                    json.dumps(row["failures"]),
                ),
            )
        return int(cur.lastrowid or 0)

    def entries(self, backend: str | None = None) -> list[Entry]:
        sql, args = "SELECT * FROM entries", ()
        if backend is not None:
            sql, args = sql + " WHERE backend = ?", (backend,)  # type: ignore[assignment]
        with self._reading() as db:
            rows = db.execute(sql + " ORDER BY id", args).fetchall()
        return [_entry(r) for r in rows]

    def get(self, entry_id: int) -> Entry | None:
        with self._reading() as db:
            row = db.execute("SELECT * FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return _entry(row) if row else None

    def forget(self, entry_id: int) -> bool:
        with self._reading() as db:
            return db.execute("DELETE FROM entries WHERE id = ?", (entry_id,)).rowcount > 0

    def nearest(self, backend: str, family: str, shapes: list[int], k: int) -> list[Entry]:
        """The ``k`` entries of ``backend`` nearest a problem (``Entry.distance``)."""
        mine = self.entries(backend)
        return sorted(mine, key=lambda e: (e.distance(family, shapes), -e.created))[:k]

    def export(self, path: Path) -> int:
        entries = self.entries()
        path.write_text("".join(json.dumps(asdict(e)) + "\n" for e in entries))
        return len(entries)

    def import_file(self, path: Path) -> int:
        """Add every entry of an export (JSON Lines); a bad line is a one-line error naming it,
        before anything is added."""
        parsed = []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                data.pop("id", None)
                parsed.append(Entry(**data))
            except (ValueError, TypeError) as exc:
                raise ConfigError(
                    f"playbook import {path}: line {n} is not an entry ({exc})"
                ) from None
        for entry in parsed:
            self.add(entry)
        return len(parsed)


def _entry(row: tuple) -> Entry:
    (id_, created, backend, family, problem, shapes, dtypes, run, speedup, schedule, failures) = row
    return Entry(
        backend=backend,
        family=family,
        problem=problem,
        shapes=json.loads(shapes),
        dtypes=json.loads(dtypes),
        run=run,
        speedup=speedup,
        schedule=json.loads(schedule),
        failures=json.loads(failures),
        id=id_,
        created=created,
    )
