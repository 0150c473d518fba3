"""Setting up, running, resuming and replaying one run directory.

Everything that can be checked without spending is checked here first: the backend,
problem, hardware config, models and keys, and options that cannot apply. A bad
input becomes a ``ConfigError`` (exit 2) before any LLM call or evaluation.
"""

from __future__ import annotations

import itertools
import math
import os
import socket
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import anyio
import structlog
import tomli_w
from pydantic import BaseModel

from ..config import RunConfig, apply_override, validate
from ..contract.backend import Backend, Capability, KnowledgePack, Problem
from ..contract.packs import PackError, read_pack
from ..contract.plugins import PluginRegistry, build_registry, load_problem
from ..engine.control import Control
from ..engine.journal import Evaluator, JournaledLLM, recorded_stop
from ..engine.lessons import run_entry
from ..engine.progress import Progress
from ..engine.prompting import prompt_pack
from ..engine.reuse import donor_schedules
from ..engine.search import IterationPool, RunSetup, Search
from ..engine.translation import Translation
from ..errors import ConfigError
from ..executors import Executor, create_executor
from ..executors.local import LocalExecutor
from ..ledger.accounting import Budget, Ledger
from ..ledger.playbook import Playbook, default_path
from ..ledger.store import RunStore
from ..llm.client import LLMClient, default_models
from ..llm.errors import LLMConfigError
from ..sandbox import isolation_level
from .exports import target_info, write_exports

log = structlog.get_logger("autocomp")

#: ``budget.wall_s`` stops new work at the limit; what is under way may finish for this
#: long, then it is cancelled
WALL_GRACE_S = 60.0


@dataclass
class Prepared(RunSetup):
    client: LLMClient | None = None
    #: not connected yet: ``async with`` it around the run
    executor: Executor = field(default_factory=LocalExecutor)


def load_backend(
    config: RunConfig, plugins: PluginRegistry | None = None
) -> tuple[Backend, Problem, KnowledgePack]:
    registry = plugins or build_registry(tuple(config.plugins))
    backend = registry.make_backend(config.backend, config.hardware, config.backend_options)
    problem = load_problem(backend, config.problem)
    if config.prompt.pack:
        try:
            return backend, problem, read_pack(config.prompt.pack)
        except PackError as exc:
            raise ConfigError(f"prompt.pack: {exc}") from None
    return backend, problem, backend.knowledge(problem)


def evaluation_slots(config: RunConfig, backend: Backend, executor: Executor) -> int:
    """Evaluations at once: the config's ``evaluation.parallelism``, else what fits on this
    machine, or on the executor's cluster, given the backend's ``Resources``."""
    if config.evaluation.parallelism:
        return config.evaluation.parallelism
    try:
        return executor.slots(backend.resources())
    except ValueError as exc:
        raise ConfigError(f"backend {backend.name}: {exc}") from None


def changed(section: BaseModel, key: str) -> bool:
    """Whether the user set ``key`` to something other than its default (a key written out
    with its default value changes nothing, so it is never a dead switch)."""
    return key in section.model_fields_set and getattr(section, key) != type(section).model_fields[
        key
    ].get_default(call_default_factory=True)


def refuse_dead_switches(
    config: RunConfig, backend: Backend, problem: Problem, pack: KnowledgePack
) -> None:
    """An option that cannot apply is refused up front, never silently ignored."""
    s, t = config.search, config.translation
    caps = backend.capabilities
    if s.stop_at_bound is not None and backend.metric_lower_bound(problem) is None:
        raise ConfigError(
            f"search.stop_at_bound: backend {backend.name} declares no lower bound for "
            f"problem {problem.id}"
        )
    if s.hw_feedback_probability > 0 and Capability.HW_FEEDBACK not in caps:
        raise ConfigError(
            f"search.hw_feedback_probability: backend {backend.name} gives no hardware feedback"
        )
    if t.iterations > 0 and not pack.translation_menu:
        raise ConfigError(f"translation.iterations: backend {backend.name} has no translation menu")
    idle = sorted(k for k in t.model_fields_set - {"iterations"} if changed(t, k))
    if t.iterations == 0 and idle:
        raise ConfigError(f"translation.{idle[0]}: has no effect unless translation.iterations > 0")
    exhaustive = s.exhaustive_first_iterations or s.exhaustive_on_stagnation_iterations
    if s.direct and exhaustive:
        raise ConfigError("search.direct: the exhaustive menu sweep needs the planning step")
    if exhaustive and not pack.menu:
        raise ConfigError(f"search.exhaustive_*: backend {backend.name} has no optimization menu")
    if not s.direct and not pack.menu:
        # every planning prompt offers the menu's strategies; an empty one offers nothing
        where = (
            f"prompt.pack {config.prompt.pack}" if config.prompt.pack else f"backend {backend.name}"
        )
        raise ConfigError(
            f"{where}: the knowledge pack has no optimization menu, and planning prompts need "
            "one (build the pack again from documents with optimization advice, or set "
            "search.direct = true)"
        )
    if s.direct and changed(config.models, "plan") and config.models.code:
        raise ConfigError("models.plan: unused in direct mode (set models.code only)")
    pairs = {
        "exhaustive_stagnation_ratio": "exhaustive_on_stagnation_iterations",
        "early_stop_threshold": "early_stop_iterations",
        "codes_per_combine": "combine_pairs",
    }
    for knob, switch in pairs.items():
        if changed(s, knob) and not getattr(s, switch):
            raise ConfigError(f"search.{knob}: has no effect unless search.{switch} > 0")
    if "examples" in s.model_fields_set and s.examples and not pack.examples:
        raise ConfigError(f"search.examples: backend {backend.name} ships no examples")
    if changed(s, "generated_menu_size") and s.menu_strategy == "static":
        raise ConfigError(
            "search.generated_menu_size: has no effect unless search.menu_strategy "
            "is generated or mixed"
        )
    if s.reuse:
        if s.continue_from:
            raise ConfigError("search.reuse: cannot start from search.continue_from's beam too")
        donor_schedules(s.reuse, backend.name, s.reuse_across_backends)  # refused now if bad
    elif changed(s, "reuse_across_backends"):
        raise ConfigError("search.reuse_across_backends: has no effect without search.reuse")
    if changed(s, "keep_factor") and s.keep_factor_iterations == 0:
        raise ConfigError(
            "search.keep_factor: has no effect unless search.keep_factor_iterations > 0"
        )


def prepare(
    config: RunConfig | dict[str, Any], with_llm: bool = True, plugins: PluginRegistry | None = None
) -> Prepared:
    """Everything checked and built that can be without spending; ``plugins``: a registry
    built for ``config.plugins`` already (the runs of a suite share one)."""
    config = validate(config)
    plugins = plugins or build_registry(config.plugins)  # the run's one registry
    backend, problem, pack = load_backend(config, plugins)
    refuse_dead_switches(config, backend, problem, pack)
    if config.playbook.enabled:  # a store that cannot be opened is bad input, now
        Playbook(playbook_path(config)).close()
    executor = create_executor(config.executor, plugins.executors(), tuple(config.plugins))
    if config.executor.kind == "local":  # a resource the machine lacks is bad input, now
        evaluation_slots(config, backend, executor)
    client = None
    plan_models = [config.llm.aliases.get(m, m) for m in config.models.plan] or default_models(
        config.llm
    )
    code_models = [config.llm.aliases.get(m, m) for m in config.models.code] or plan_models
    pack = prompt_pack(pack, config.prompt.knowledge, [*plan_models, *code_models])
    if with_llm:
        client = LLMClient(config.llm, providers=plugins.llm_providers())
        try:
            client.validate_models([*plan_models, *code_models])
        except LLMConfigError as exc:
            raise ConfigError(f"models: {exc}") from None
        refuse_unpriced_usd_budget(config, client, [*plan_models, *code_models])
    return Prepared(config, backend, problem, pack, plan_models, code_models, client, executor)


def refuse_unpriced_usd_budget(config: RunConfig, client: LLMClient, models: list[str]) -> None:
    """A dollar budget over a model without a price would count $0 and never stop the run."""
    if not math.isfinite(config.budget.usd):
        return
    for model in models:
        unpriced = client.missing_price(model)
        if unpriced is not None:
            provider, name = unpriced
            raise ConfigError(
                f"budget.usd: model {model} has no price, so its calls would count as $0; give "
                f'one in [llm] prices_file or inline as [llm.prices.{provider}."{name}"] '
                f"input = ..., output = ... (USD per million tokens)"
            )


def default_run_dir(config: RunConfig) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in config.problem)[-60:]
    return Path("runs") / f"{config.backend}-{safe}-{stamp}"


@dataclass
class RunSummary:
    run_dir: Path
    data: dict[str, Any]

    @property
    def stop_reason(self) -> str:
        return self.data["stop_reason"]

    @property
    def best_score(self) -> float:
        return self.data["best_score"]

    @property
    def speedup(self) -> float | None:
        return self.data["speedup"]


class SharedRuns(Protocol):
    """What ``execute`` takes from runs that share their spending (a suite's
    ``SuiteShare``): the evaluation slots, and on joining, the budget that counts every run
    and the display that shows this one. The LLM client is shared too, entered by them."""

    limiter: anyio.CapacityLimiter

    def join(self, run_dir: Path, prep: Prepared, ledger: Ledger) -> tuple[Budget, Progress]: ...
    def pool(self, run_dir: Path) -> IterationPool: ...


async def execute(
    prep: Prepared,
    run_dir: Path,
    *,
    replay_source: RunStore | None = None,
    reevaluate: bool = False,
    progress_stream: bool = True,
    suite: SharedRuns | None = None,
) -> RunSummary:
    """Run (or continue) the search in ``run_dir`` and write its exports. The caller has
    entered ``prep.executor``; ``suite``: what the runs of a suite share (the LLM client,
    already entered, the budget, evaluation slots and the display)."""
    cfg = prep.config
    slots = evaluation_slots(cfg, prep.backend, prep.executor)  # bad input: before the journal
    await prep.executor.prepare(prep.backend, slots)
    store = _open_journal(prep, run_dir)
    ledger = Ledger.from_store(store)
    if suite is not None:  # the suite's budget counts every run; its display shows this one
        budget, progress = suite.join(run_dir, prep, ledger)
    else:
        budget, progress = (
            Budget(cfg.budget, ledger),
            _terminal_progress(prep, ledger, progress_stream),
        )
    evaluator = _evaluator(prep, store, ledger, budget, slots, replay_source, reevaluate, suite)
    llm = JournaledLLM(
        prep.client,
        store,
        ledger,
        budget,
        replay_source=replay_source,
        max_in_flight=cfg.llm.max_concurrency,
    )
    progress.watch(llm, evaluator)
    search = Search(prep, store, llm, evaluator, progress)
    if suite is not None:
        search.pool = suite.pool(run_dir)
    search.on_iteration = _iteration_exporter(prep, run_dir, store, ledger, search.translation)
    store.event("session_start", pid=os.getpid(), host=socket.gethostname())
    summary = None
    stop_reason = "interrupted"
    try:
        stop_reason = await _run_search(search, prep, ledger, progress, own_client=suite is None)
        summary = finish(store, search, prep, run_dir, stop_reason, ledger)
        return summary
    finally:
        if search.pool is not None:
            search.pool.leave()
        store.set_meta("wall_s", ledger.wall_s)
        if summary is None:  # crashed or interrupted: still leave readable exports behind
            try:
                finish(store, search, prep, run_dir, stop_reason, ledger)
            except Exception:  # the journal is intact; exports can be redone with `report`
                log.warning("could not write exports", run_dir=str(run_dir))
        store.close()


def _evaluator(
    prep: Prepared,
    store: RunStore,
    ledger: Ledger,
    budget: Budget,
    slots: int,
    replay_source: RunStore | None,
    reevaluate: bool,
    suite: SharedRuns | None,
) -> Evaluator:
    """The run's evaluations: a replay reuses its source's (unless ``reevaluate``) and stops
    where its source stopped."""
    cfg = prep.config
    return Evaluator(
        prep.backend,
        prep.problem,
        store,
        ledger,
        budget,
        slots,
        cfg.evaluation.timeout_s,
        cfg.seed,
        want_feedback=cfg.search.hw_feedback_probability > 0,
        recorded=None if reevaluate else replay_source,
        recorded_stop=recorded_stop(replay_source) if replay_source is not None else None,
        executor=prep.executor,
        limiter=suite.limiter if suite else None,
    )


def _open_journal(prep: Prepared, run_dir: Path) -> RunStore:
    """The run's journal, holding what the run is (config, models, target, prices,
    isolation), and its config written out as ``config.toml``."""
    cfg = prep.config
    store = RunStore(run_dir)
    store.set_meta("config", cfg.to_toml_dict(only_set=True))
    store.set_meta("models", {"plan": prep.plan_models, "code": prep.code_models})
    store.set_meta("target", target_info(prep.backend, prep.problem))
    if prep.client is not None:
        store.set_meta("prices", prep.client.price_table())
    store.set_meta("isolation", isolation_level())
    (run_dir / "config.toml").write_text(tomli_w.dumps(cfg.to_toml_dict()))
    return store


def _terminal_progress(prep: Prepared, ledger: Ledger, stream: bool) -> Progress:
    """The display of a run on its own (``stream`` False: quiet)."""
    return Progress.for_terminal(
        ledger,
        prep.backend.metric_unit,
        prep.config.search.iterations,
        quiet=not stream,
        budget=prep.config.budget,
        title=f"{prep.backend.name} / {prep.problem.id}",
    )


def _iteration_exporter(
    prep: Prepared, run_dir: Path, store: RunStore, ledger: Ledger, translation: Translation
) -> Callable[[int], None]:
    """Rewrites the exports after each iteration; a failure to write them is logged."""
    drop_root = translation.drop_root

    def export_iteration(i: int) -> None:
        try:
            write_exports(
                run_dir,
                store,
                prep.backend,
                prep.problem,
                ledger,
                stop_reason=None,
                drop_root=drop_root,
                iterations=(0, i),
            )
        except OSError as exc:  # a full disk must not end the run: the journal has it all
            log.warning("could not write exports", run_dir=str(run_dir), error=str(exc))

    return export_iteration


async def _run_search(
    search: Search, prep: Prepared, ledger: Ledger, progress: Progress, own_client: bool
) -> str:
    """The search, with the backend (and the LLM client, when the run owns it) entered and
    closed around it even on a crash or Ctrl-C; why it stopped (``budget.wall_s`` also when
    the work under way was cut ``WALL_GRACE_S`` after that budget)."""
    wall_s = prep.config.budget.wall_s
    hard_stop = None  # the doors stop new work at budget.wall_s; this ends the rest
    if wall_s is not None:
        hard_stop = max(0.0, wall_s - ledger.prior_wall_s) + WALL_GRACE_S
    with anyio.move_on_after(hard_stop) as scope, progress:
        async with AsyncExitStack() as resources:
            await resources.enter_async_context(prep.backend)
            if prep.client is not None and own_client:
                await resources.enter_async_context(prep.client)
            await search.run()
            stop = search.stop_reason or "completed"
            if prep.config.search.control != "none" and stop != "interrupted":
                await Control(search, ledger).run(stop)
    return "budget.wall_s" if scope.cancelled_caught else search.stop_reason or "completed"


def playbook_path(config: RunConfig) -> Path:
    return Path(config.playbook.path).expanduser() if config.playbook.path else default_path()


def write_back(store: RunStore, prep: Prepared, run_dir: Path) -> None:
    """This run's entry in the playbook (``ledger.playbook``); a store that cannot be
    written is logged, never the run's failure: the journal has it all."""
    book = prep.config.playbook
    root = store.candidate("root")
    if not book.enabled or store.get_meta("playbook_written") or root is None or not root.correct:
        return
    try:
        playbook = Playbook(playbook_path(prep.config))
        try:
            playbook.add(run_entry(store, prep.backend.name, prep.problem, run_dir))
        finally:
            playbook.close()
        store.set_meta("playbook_written", True)
    except (ConfigError, OSError) as exc:
        log.warning("could not write the playbook", error=str(exc))


def finish(
    store: RunStore, search: Search, prep: Prepared, run_dir: Path, stop_reason: str, ledger: Ledger
) -> RunSummary:
    if (
        stop_reason != "interrupted" and search.llm.replay_source is None
    ):  # a replay learns nothing new
        write_back(store, prep, run_dir)
    store.set_meta("stop_reason", stop_reason)
    store.set_meta("status", "finished" if stop_reason not in ("interrupted",) else stop_reason)
    store.event("session_end", stop_reason=stop_reason)
    data = write_exports(
        run_dir,
        store,
        prep.backend,
        prep.problem,
        ledger,
        stop_reason=stop_reason,
        drop_root=search.translation.drop_root,
        stop_detail=search.stop_detail if stop_reason == search.stop_reason else "",
    )
    return RunSummary(run_dir, data)


async def optimize_async(
    config: RunConfig | dict[str, Any], run_dir: str | Path | None = None, progress: bool = True
) -> RunSummary:
    prep = prepare(config)
    target = Path(run_dir or prep.config.run_dir or default_run_dir(prep.config))
    if RunStore.exists(target):
        raise ConfigError(f"run_dir: {target} already holds a run (use `autocomp-core resume`)")
    async with prep.executor:  # connected before anything is spent
        return await execute(prep, target, progress_stream=progress)


def load_run_config(run_dir: Path) -> RunConfig:
    if not RunStore.exists(run_dir):
        raise ConfigError(f"run directory {run_dir}: no run found (missing {run_dir}/run.sqlite)")
    store = RunStore(run_dir)
    try:
        data = store.get_meta("config")
    finally:
        store.close()
    if data is None:
        raise ConfigError(f"run directory {run_dir}: the run never recorded its config")
    return validate(data)


#: what a resume may change: how much to spend, how to reach the LLMs and where to evaluate,
#: not the search
RESUME_OVERRIDABLE = ("budget.", "llm.", "evaluation.", "executor.")


async def resume_async(
    run_dir: str | Path, progress: bool = True, overrides: list[str] | None = None
) -> RunSummary:
    """Continue a run; ``overrides`` (``budget.usd=20``) may raise budgets or change LLM
    and evaluation settings, never the search itself."""
    run_dir = Path(run_dir)
    config = load_run_config(run_dir)
    if overrides:
        data = config.to_toml_dict(only_set=True)
        for item in overrides:
            if not item.strip().startswith(RESUME_OVERRIDABLE):
                raise ConfigError(
                    f"--set {item.split('=')[0]}: resume may only change "
                    "budget.*, llm.*, evaluation.* and executor.*"
                )
            apply_override(data, item)
        config = validate(data)
    prep = prepare(config)
    async with prep.executor:
        return await execute(prep, run_dir, progress_stream=progress)


def free_name(path: Path) -> Path:
    """``path``, or ``path-2``, ``path-3``, ... : the first that does not exist yet."""
    candidates = (path.with_name(f"{path.name}-{n}") for n in itertools.count(2))
    return path if not path.exists() else next(p for p in candidates if not p.exists())


async def replay_async(
    run_dir: str | Path,
    into: str | Path | None = None,
    progress: bool = True,
    reevaluate: bool = False,
) -> RunSummary:
    """Re-run a recorded run from its recorded LLM answers (no LLM is called).

    Evaluations are reused as recorded (a GPU's timings are never bit-identical twice);
    ``reevaluate`` measures every program again, which on a deterministic backend must
    reach the same beam."""
    run_dir = Path(run_dir)
    config = load_run_config(run_dir)
    prep = prepare(config, with_llm=False)
    target = (
        Path(into)
        if into
        else free_name(run_dir.with_name(f"{run_dir.name}-replay-{time.strftime('%H%M%S')}"))
    )
    if RunStore.exists(target):
        raise ConfigError(f"replay target {target} already holds a run")
    source = RunStore(run_dir)
    models = source.get_meta("models") or {}
    prep.plan_models = models.get("plan", prep.plan_models)
    prep.code_models = models.get("code", prep.code_models)
    try:
        async with prep.executor:
            return await execute(
                prep, target, replay_source=source, reevaluate=reevaluate, progress_stream=progress
            )
    finally:
        source.close()


def optimize(
    config: RunConfig | dict[str, Any], run_dir: str | Path | None = None, progress: bool = True
) -> RunSummary:
    """Blocking form of ``optimize_async``."""
    return anyio.run(lambda: optimize_async(config, run_dir, progress))
