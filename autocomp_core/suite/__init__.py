"""``autocomp-core optimize-suite``: many problems of one backend in one invocation.

The searches run concurrently (``concurrency`` at a time), each in its own run directory
under the suite directory, sharing one LLM client (its rate and concurrency limits), one
budget, one executor and its evaluation slots. The suite directory holds::

    suite.toml          the problems and the configuration they share
    <problem>/          one run directory per problem (run.sqlite, exports, report.md)
    summary.md          the suite's summary (also summary.json)

``resume SUITE_DIR`` continues every run; ``report SUITE_DIR --html`` shows them on one
page. Everything that can be checked is checked for every problem before anything is spent.
"""

from __future__ import annotations

import json
import re
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import tomli_w

from ..config import apply_override, read_toml, validate
from ..contract.plugins import make_backend
from ..engine.progress import Progress
from ..errors import ConfigError, RunError
from ..ledger.accounting import Budget, BudgetReached, Ledger
from ..ledger.store import RunStore
from ..run.exports import atomic_write
from ..run.runner import RESUME_OVERRIDABLE, evaluation_slots, execute, prepare
from .progress import SuiteProgress
from .summary import problem_row, summarize, to_markdown

if TYPE_CHECKING:
    from ..run.runner import Prepared

SUITE_FILE = "suite.toml"
SUMMARY_JSON, SUMMARY_MD = "summary.json", "summary.md"
#: problems searched at once when the suite does not say: at least this many, more when
#: the executor has more evaluation slots
MIN_CONCURRENCY = 4


def is_suite(path: Path | str) -> bool:
    return (Path(path) / SUITE_FILE).is_file()


def select_problems(
    data: dict[str, Any], ids: list[str], every: bool, folder: Path | None
) -> list[str]:
    """The problems of a suite: ids given, every problem of the backend (``every``), or
    each file of ``folder`` that the backend loads as a problem (KernelBench files)."""
    if sum((bool(ids), every, folder is not None)) != 1:
        raise ConfigError("optimize-suite: give problem ids, --all, or --dir (one of them)")
    if ids:
        return list(dict.fromkeys(ids))
    cfg = validate({**data, "problem": "?"})
    backend = make_backend(cfg.backend, cfg.hardware, cfg.backend_options, cfg.plugins)
    if every:
        return [p.id for p in backend.problems()]
    assert folder is not None
    if not folder.is_dir():
        raise ConfigError(f"--dir: {folder} is not a folder")
    files = sorted(
        p for p in folder.iterdir() if p.is_file() and p.suffix == backend.file_extension
    )
    if not files:
        raise ConfigError(f"--dir: {folder} holds no {backend.file_extension} file")
    return [str(p.resolve()) for p in files]


def run_dir_names(problems: list[str]) -> list[str]:
    """A folder name per problem: its id (a file's name without extension), made safe and
    unique."""
    names: list[str] = []
    for ref in problems:
        stem = Path(ref).stem if "/" in ref or Path(ref).is_file() else ref
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", stem).strip(".")[-80:] or "problem"
        unique, n = name, 1
        while unique in names:
            n += 1
            unique = f"{name}-{n}"
        names.append(unique)
    return names


@dataclass
class SuiteSpending:
    """The ledgers of a suite's runs, counted together against the suite's budget (a run
    not started in this session counts with what its journal recorded)."""

    ledgers: dict[str, Ledger] = field(default_factory=dict)
    prior_wall_s: float = 0.0  # the suite's earlier sessions
    started: float = field(default_factory=time.monotonic)

    @property
    def wall_s(self) -> float:
        return self.prior_wall_s + time.monotonic() - self.started

    @property
    def cost_usd(self) -> float:
        return sum(led.cost_usd for led in self.ledgers.values())

    @property
    def tokens(self) -> int:
        return sum(led.tokens for led in self.ledgers.values())

    @property
    def llm_calls(self) -> int:
        return sum(led.llm_calls for led in self.ledgers.values())

    @property
    def evaluations(self) -> int:
        return sum(led.evaluations for led in self.ledgers.values())


class IterationPool:
    """The iterations that runs stopped at the bound (``search.stop_at_bound``) did not use.
    The rule: each goes, one at a time, to the run still going with the most headroom,
    log(best / lower bound), when it reaches the end of its own iterations; a run with less
    headroom than another still going, or with no bound, gets none and ends."""

    def __init__(self) -> None:
        self.free = 0
        self.headrooms: dict[str, float] = {}  # runs still going -> their headroom
        self.granted = 0


@dataclass
class RunIterations:
    """One run's door to the pool (``engine.search.IterationPool``)."""

    shared: IterationPool
    run: str

    def headroom(self, value: float | None) -> None:
        if value is None:
            self.shared.headrooms.pop(self.run, None)
        else:
            self.shared.headrooms[self.run] = value

    def release(self, iterations: int) -> None:
        self.shared.free += max(0, iterations)
        self.leave()

    def grant(self) -> bool:
        mine = self.shared.headrooms.get(self.run)
        if self.shared.free <= 0 or mine is None or mine < max(self.shared.headrooms.values()):
            return False
        self.shared.free -= 1
        self.shared.granted += 1
        return True

    def leave(self) -> None:
        self.shared.headrooms.pop(self.run, None)


@dataclass
class SuiteShare:
    """What ``runner.execute`` takes from the suite for each run (``runner.SharedRuns``)."""

    limiter: anyio.CapacityLimiter  # evaluation slots, shared by every run
    spending: SuiteSpending
    budget: Budget  # one for the suite, so calls in flight in every run count together
    display: SuiteProgress
    problems: dict[str, str]  # run directory -> problem
    iterations: IterationPool = field(default_factory=IterationPool)

    def pool(self, run_dir: Path) -> RunIterations:
        return RunIterations(self.iterations, str(run_dir))

    def join(self, run_dir: Path, prep: Prepared, ledger: Ledger) -> tuple[Budget, Progress]:
        self.spending.ledgers[str(run_dir)] = ledger
        progress = Progress(
            ledger=ledger,
            unit=prep.backend.metric_unit,
            total_iterations=prep.config.search.iterations,
            budget=prep.config.budget,
        )
        self.display.started(self.problems[str(run_dir)], progress)
        return self.budget, progress


@dataclass
class SuiteResult:
    suite_dir: Path
    data: dict[str, Any]


async def optimize_suite(
    data: dict[str, Any],
    problems: list[str],
    suite_dir: Path,
    concurrency: int | None = None,
    progress: bool = True,
) -> SuiteResult:
    """Start a suite: ``data`` is the configuration every problem shares (a run config
    without ``problem``)."""
    if is_suite(suite_dir) or RunStore.exists(suite_dir):
        raise ConfigError(
            f"suite directory {suite_dir}: already holds a suite or run (use "
            "`autocomp-core resume`)"
        )
    if "problem" in data or "run_dir" in data:
        raise ConfigError(
            "optimize-suite: the problems and their run directories come from "
            "the suite (remove problem and run_dir from the configuration)"
        )
    if not problems:
        raise ConfigError("optimize-suite: no problem to optimize")
    plan = {
        "concurrency": concurrency or 0,
        "problems": [{"problem": p, "dir": d} for p, d in zip(problems, run_dir_names(problems))],
        "config": data,
    }
    preps = _prepare_all(plan, suite_dir)  # every problem checked before the suite exists
    suite_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(suite_dir / SUITE_FILE, tomli_w.dumps(plan))
    return await _run(plan, preps, suite_dir, progress)


async def resume_suite(
    suite_dir: Path, overrides: list[str] | None = None, progress: bool = True
) -> SuiteResult:
    """Continue every run of a suite; ``overrides`` as for ``resume``."""
    plan = read_toml(suite_dir / SUITE_FILE)
    for item in overrides or []:
        if not item.strip().startswith(RESUME_OVERRIDABLE):
            raise ConfigError(
                f"--set {item.split('=')[0]}: resume may only change "
                "budget.*, llm.*, evaluation.* and executor.*"
            )
        apply_override(plan["config"], item)
    preps = _prepare_all(plan, suite_dir)
    if overrides:
        atomic_write(suite_dir / SUITE_FILE, tomli_w.dumps(plan))
    return await _run(plan, preps, suite_dir, progress)


def _prepare_all(plan: dict[str, Any], suite_dir: Path) -> list[Prepared]:
    """One prepared run per problem, sharing a plugin registry, the LLM client and the
    executor. The suite's wall-clock budget is the suite's, not each run's."""
    from ..contract.plugins import build_registry

    base = dict(plan["config"])
    base["budget"] = {k: v for k, v in base.get("budget", {}).items() if k != "wall_s"}
    registry = build_registry(base.get("plugins", []))
    preps: list[Prepared] = []
    for entry in plan["problems"]:
        config = {**base, "problem": entry["problem"], "run_dir": str(suite_dir / entry["dir"])}
        try:
            preps.append(prepare(config, with_llm=not preps, plugins=registry))
        except ConfigError as exc:
            raise ConfigError(f"problem {entry['problem']}: {exc}") from None
    for prep in preps[1:]:
        prep.client, prep.executor = preps[0].client, preps[0].executor
    return preps


async def _run(
    plan: dict[str, Any], preps: list[Prepared], suite_dir: Path, show: bool
) -> SuiteResult:
    first = preps[0]
    dirs = {entry["problem"]: suite_dir / entry["dir"] for entry in plan["problems"]}
    prior_wall = _read_summary(suite_dir).get("wall_s", 0.0)
    spending = SuiteSpending(
        {str(d): _recorded_ledger(d) for d in dirs.values() if RunStore.exists(d)},
        prior_wall_s=prior_wall,
    )
    budget = Budget(first.config.budget, spending)
    display = SuiteProgress.for_terminal(
        list(dirs), spending, quiet=not show, title=f"{first.backend.name}: {suite_dir.name}"
    )
    notes: dict[str, str] = {}  # problems that did not run: why (their journal cannot say)
    stops: list[str] = []  # how each run of this session ended
    wall_budget = validate({**plan["config"], "problem": "?"}).budget.wall_s
    started = time.monotonic()
    stop_reason = "interrupted"

    async def one(prep: Prepared, at_once: anyio.CapacityLimiter, share: SuiteShare) -> None:
        problem = prep.config.problem
        async with at_once:
            try:
                budget.check_llm()
                budget.check_evaluation()
                result = await execute(prep, dirs[problem], suite=share)
                stops.append(result.stop_reason)
                display.finished(problem, result.stop_reason)
            except BudgetReached as exc:  # the suite's budget was spent before this one ran
                stops.append(exc.reason)
                notes[problem] = f"{exc.reason} (not started)"
                display.finished(problem, notes[problem])
            except RunError as exc:  # this problem cannot run (a wrong baseline): the others go on
                notes[problem] = f"error: {exc}"
                display.finished(problem, "error")

    try:
        async with first.executor:  # connected before anything is spent
            slots = evaluation_slots(first.config, first.backend, first.executor)
            await first.executor.prepare(first.backend, slots)  # workers start now
            share = SuiteShare(
                anyio.CapacityLimiter(slots),
                spending,
                budget,
                display,
                {str(d): p for p, d in dirs.items()},
            )
            at_once = anyio.CapacityLimiter(plan.get("concurrency") or max(MIN_CONCURRENCY, slots))
            wall_left = None if wall_budget is None else max(0.0, wall_budget - prior_wall)
            async with AsyncExitStack() as stack:
                if first.client is not None:
                    await stack.enter_async_context(first.client)
                stack.enter_context(display)
                with anyio.move_on_after(wall_left) as scope:
                    async with anyio.create_task_group() as tg:
                        for prep in preps:
                            tg.start_soon(one, prep, at_once, share)
        # a budget, or the cluster (no node for executor.no_nodes_timeout_s), stopped runs
        budgets = [reason for reason in stops if reason.startswith(("budget.", "executor."))]
        stop_reason = (
            "budget.wall_s" if scope.cancelled_caught else budgets[0] if budgets else "completed"
        )
    finally:
        result = _write_summary(
            suite_dir, dirs, notes, stop_reason, prior_wall + time.monotonic() - started
        )
    return result


def _recorded_ledger(run_dir: Path) -> Ledger:
    store = RunStore(run_dir)
    try:
        return Ledger.from_store(store)
    finally:
        store.close()


def _read_summary(suite_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((suite_dir / SUMMARY_JSON).read_text())
    except (OSError, ValueError):
        return {}


def _write_summary(
    suite_dir: Path, dirs: dict[str, Path], notes: dict[str, str], stop_reason: str, wall_s: float
) -> SuiteResult:
    rows = [problem_row(problem, run_dir, notes.get(problem)) for problem, run_dir in dirs.items()]
    data = summarize(rows, stop_reason)
    data["wall_s"] = round(wall_s, 3)
    atomic_write(suite_dir / SUMMARY_JSON, json.dumps(data, indent=2, allow_nan=False))
    atomic_write(suite_dir / SUMMARY_MD, to_markdown(f"Suite {suite_dir.name}", data))
    return SuiteResult(suite_dir, data)
