"""The backend contract as the engine keeps it: typed options, one channel for hardware and
options, the lifecycle around a run, capabilities and resources the engine acts on, the
exception contract of ``evaluate``, and one plugin registry per run."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import tomllib
from pathlib import Path

import anyio
import pytest
from engine_helpers import toy_config
from toy_plugin import ToyBackend

from autocomp_core import (
    Backend,
    Capability,
    ConfigError,
    EvalContext,
    FailureKind,
    Resources,
    make_backend,
)
from autocomp_core.api import optimize_async
from autocomp_core.config import validate
from autocomp_core.contract.plugins import build_registry
from autocomp_core.contract.resources import local_slots
from autocomp_core.engine.journal import evaluation_key
from autocomp_core.executors.guarded import evaluate_guarded
from autocomp_core.executors.local import LocalExecutor
from autocomp_core.ledger.store import RunStore
from autocomp_core.run.runner import evaluation_slots
from autocomp_core.testing import check_backend
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()
ROOT = Path(__file__).parents[2]
TOY_PROBLEMS = ROOT / "tests" / "toybackend" / "problems"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


# -- typed options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "option, message",
    [
        (
            "delay=1",
            "error: backend_options.delay: unknown key (known: delay_s, claimed_lower_bound, declare_lower_bound)",
        ),
        ("delay_s=soon", "error: backend_options.delay_s: Input should be a valid number"),
        (
            "delay_s=-2",
            "error: backend_options.delay_s: Input should be greater than or equal to 0",
        ),
    ],
)
def test_eval_refuses_a_mistyped_or_ill_typed_option_in_one_line(option, message):
    out = cli(
        "eval", "toy", "sum_squares", str(TOY_PROBLEMS / "sum_squares.py"), "--option", option
    )
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith(message)


def test_options_are_typed_values_on_the_backend_and_key_its_evaluations():
    backend = make_backend("toy", {}, {"delay_s": 0.25})
    assert backend.options.delay_s == 0.25
    problem = backend.load_problem("sum_squares")
    assert evaluation_key(backend, problem, "x") != evaluation_key(ToyBackend(), problem, "x")


# -- one channel ----------------------------------------------------------------------------


def test_evaluate_gets_hardware_and_options_only_from_the_backend():
    fields = {f.name for f in dataclasses.fields(EvalContext)}
    assert fields == {"seed", "timeout_s", "want_feedback"}
    with pytest.raises(TypeError):
        EvalContext(hardware=ToyBackend().hardware)  # type: ignore[call-arg]


# -- lifecycle ------------------------------------------------------------------------------


def lifecycle_config(server, tmp_path: Path, **options) -> dict:
    cfg = toy_config(
        server, tmp_path, iterations=1, beam_size=1, plans_per_candidate=2, codes_per_plan=1
    )
    cfg.update(
        backend="toylife",
        plugins=["lifecycle_plugin"],
        backend_options={"events_file": str(tmp_path / "events"), **options},
    )
    return cfg


@pytest.mark.asyncio
async def test_the_engine_opens_the_backend_before_evaluating_and_closes_it_after(
    llm_server, tmp_path
):
    await optimize_async(lifecycle_config(llm_server, tmp_path))
    events = (tmp_path / "events").read_text().split()
    assert events[0] == "open" and events[-1] == "close"
    assert events.count("open") == events.count("close") == 1
    assert events.count("eval") >= 2


@pytest.mark.asyncio
async def test_the_backend_is_closed_when_a_run_is_cut_short(llm_server, tmp_path):
    cfg = lifecycle_config(llm_server, tmp_path, delay_s=5.0)
    cfg["budget"] = {"wall_s": 1.0}  # stops in the middle of the first evaluation
    summary = await optimize_async(cfg)
    assert summary.stop_reason == "budget.wall_s"
    events = (tmp_path / "events").read_text().split()
    # opened once and closed once, whether or not the cut came before the first evaluation
    # started (on a loaded machine the engine may take the whole second to get there)
    assert events in (["open", "eval", "close"], ["open", "close"])
    ended = RunStore(summary.run_dir, readonly=True).events("session_end")
    assert [e["stop_reason"] for e in ended] == ["budget.wall_s"]  # the run ended once


def test_eval_command_opens_and_closes_the_backend(tmp_path):
    events = tmp_path / "events"
    env_plugins = {"AUTOCOMP_PLUGINS": "toy_plugin,lifecycle_plugin"}
    out = subprocess.run(
        [
            *CLI,
            "eval",
            "toylife",
            "sum_squares",
            str(TOY_PROBLEMS / "sum_squares.py"),
            "--option",
            f"events_file={json.dumps(str(events))}",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, **env_plugins},
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["correct"] is True
    assert events.read_text().split() == ["open", "eval", "close"]


# -- capabilities ---------------------------------------------------------------------------

#: for every capability, a setting the engine refuses when the backend lacks it
NEEDS = {Capability.HW_FEEDBACK: {"hw_feedback_probability": 0.5}}


def test_every_capability_changes_what_the_engine_accepts():
    assert set(NEEDS) == set(Capability)


@pytest.mark.asyncio
@pytest.mark.parametrize("capability", list(Capability))
async def test_a_setting_needing_a_capability_is_refused_without_it(
    llm_server, tmp_path, monkeypatch, capability
):
    monkeypatch.setattr(ToyBackend, "capabilities", frozenset(set(Capability) - {capability}))
    cfg = toy_config(llm_server, tmp_path, iterations=1, **NEEDS[capability])
    with pytest.raises(ConfigError, match=f"search.{next(iter(NEEDS[capability]))}"):
        await optimize_async(cfg)
    assert llm_server.request_count == 0


@pytest.mark.asyncio
async def test_translation_follows_the_knowledge_pack(llm_server, tmp_path, monkeypatch):
    cfg = toy_config(llm_server, tmp_path, iterations=1, plans_per_candidate=1, codes_per_plan=1)
    cfg["translation"] = {"iterations": 1}
    original = ToyBackend.knowledge

    def without_translation(self, problem):
        pack = original(self, problem)
        pack.translation_menu = []
        return pack

    monkeypatch.setattr(ToyBackend, "knowledge", without_translation)
    with pytest.raises(
        ConfigError,
        match=r"translation\.iterations: backend toy has no "
        r"translation menu",
    ):
        await optimize_async(cfg)


# -- resources ------------------------------------------------------------------------------

MACHINE = {"cpus": 8, "memory_mb": 32_768}


@pytest.mark.parametrize(
    "resources, slots",
    [
        (Resources(), 8),  # one CPU each
        (Resources(cpus=2), 4),
        (Resources(cpus=0.5), 16),
        (Resources(memory_mb=6000), 5),
        (Resources(cpus=64, memory_mb=64_000), 1),  # a small machine still runs one
        (Resources(gpus=1, available={"gpus": 3}), 3),
        (Resources(gpus=0.5, available={"gpus": 3}), 6),
        (Resources(custom={"neuron_cores": 2}, available={"neuron_cores": 8}), 4),
        (Resources(cpus=4, custom={"spike_slots": 1}, available={"spike_slots": 3}), 2),
        (Resources(gpus=1, parallel=5), 5),  # the backend schedules its devices itself
    ],
)
def test_each_resource_bounds_the_evaluations_at_once(resources, slots):
    assert local_slots(resources, MACHINE) == slots


@pytest.mark.parametrize(
    "resources, missing",
    [
        (Resources(gpus=1), "needs 1 gpus, and this machine offers 0"),
        (
            Resources(custom={"neuron_cores": 1}, available={"neuron_cores": 0.5}),
            "needs 1 neuron_cores, and this machine offers 0.5",
        ),
    ],
)
def test_a_resource_the_machine_lacks_is_an_error(resources, missing):
    with pytest.raises(ValueError, match=missing):
        local_slots(resources, MACHINE)


def test_resources_are_validated():
    for bad in (
        {"cpus": 0},
        {"memory_mb": -1},
        {"gpus": -1},
        {"parallel": 0},
        {"custom": {"boards": -1}},
    ):
        with pytest.raises(ValueError):
            Resources(**bad)


def test_the_run_takes_its_evaluation_slots_from_the_backend(tmp_path):
    cfg = validate(
        {
            "backend": "toylife",
            "problem": "sum_squares",
            "plugins": ["lifecycle_plugin"],
            "backend_options": {"events_file": str(tmp_path / "e")},
        }
    )
    backend = make_backend("toylife", {}, cfg.backend_options, ["lifecycle_plugin"])
    here = LocalExecutor()
    assert evaluation_slots(cfg, backend, here) == local_slots(Resources(cpus=1))
    assert (
        evaluation_slots(
            cfg.model_copy(
                update={"evaluation": cfg.evaluation.model_copy(update={"parallelism": 3})}
            ),
            backend,
            here,
        )
        == 3
    )


def test_a_backend_asking_for_gpus_the_machine_lacks_is_refused_before_spending(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(
        'backend = "toylife"\nproblem = "sum_squares"\n'
        'plugins = ["lifecycle_plugin"]\n[backend_options]\n'
        f"events_file = {json.dumps(str(tmp_path / 'events'))}\ngpus = 1\n"
    )
    out = cli("optimize", str(config), "--run-dir", str(tmp_path / "run"))
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "error: backend toylife: one evaluation needs 1 gpus, and this "
        "machine offers 0 (say how many in the hardware config)"
    )
    assert not (tmp_path / "events").exists()


# -- the evaluate contract ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_an_exception_from_evaluate_becomes_an_infra_error():
    class Broken(ToyBackend):
        async def evaluate(self, problem, code, ctx):
            raise FileNotFoundError("simulator binary missing")

    backend = Broken()
    result = await evaluate_guarded(
        backend, backend.load_problem("sum_squares"), "x", EvalContext()
    )
    assert result.failure is FailureKind.INFRA_ERROR and not result.correct
    assert result.feedback == "evaluator error: FileNotFoundError: simulator binary missing"


#: this repository's plugins by backend name (their entry points), installed or not
REPO_PLUGINS = {
    name: module
    for pyproject in sorted(ROOT.glob("plugins/*/pyproject.toml"))
    for name, module in tomllib.loads(pyproject.read_text())["project"]
    .get("entry-points", {})
    .get("autocomp", {})
    .items()
}


@pytest.mark.parametrize("name", sorted(set(build_registry().backends()) | set(REPO_PLUGINS)))
def test_every_installed_backend_keeps_the_contract(name):
    """Declarations, problems, knowledge, resources, lifecycle, and no catch-all in
    ``evaluate`` (an unknown problem raises instead of coming back as a result). The
    plugins of this repository are loaded by module name where they are not installed."""
    backend: Backend = make_backend(
        name, {}, {}, plugins=[REPO_PLUGINS[name]] if name in REPO_PLUGINS else []
    )
    anyio.run(check_backend, backend)


# -- one registry per run -------------------------------------------------------------------


@pytest.mark.asyncio
async def test_an_llm_provider_named_in_the_run_config_serves_the_run(llm_server, tmp_path):
    cfg = toy_config(llm_server, tmp_path, iterations=1, plans_per_candidate=1, codes_per_plan=1)
    cfg["plugins"] = ["acme_llm_plugin"]
    cfg["models"] = {"plan": [f"acme@{llm_server.openai_base_url}::scripted"]}
    summary = await optimize_async(cfg)
    assert summary.data["llm_calls"] == 2 and llm_server.request_count == 2
    assert set(summary.data["models"]["plan"]) == {f"acme@{llm_server.openai_base_url}::scripted"}


def test_a_backend_named_with_its_models_validates_with_them():
    from pydantic import Field, ValidationError

    from autocomp_core import BackendOptions, HardwareConfig

    class Chip(HardwareConfig):
        lanes: int = Field(4, ge=1)

    class Knobs(BackendOptions):
        reps: int = 3

    class ChipBackend(Backend[Chip, Knobs]):
        name = "chip"

        def problems(self):
            return []

        def knowledge(self, problem):
            raise NotImplementedError

        async def evaluate(self, problem, code, ctx):
            raise NotImplementedError

    assert ChipBackend.hardware_config_type is Chip and ChipBackend.options_type is Knobs
    backend = ChipBackend({"lanes": 8}, {"reps": 5})
    assert (backend.hardware.lanes, backend.options.reps) == (8, 5)
    with pytest.raises(ValidationError):
        ChipBackend({"lanes": 0})
    with pytest.raises(ValidationError):
        ChipBackend({}, {"unknown": 1})

    class Wider(Chip):
        lanes: int = 16

    class Own(ChipBackend):  # a subclass keeps what it inherits, or what it sets itself
        hardware_config_type = Wider

    assert Own().hardware.lanes == 16 and Own.options_type is Knobs


@pytest.mark.asyncio
async def test_a_run_cut_at_the_hard_wall_ends_once(llm_server, tmp_path, monkeypatch):
    """Past budget.wall_s and its grace, work that did not stop at the doors is cancelled: the
    run still ends once, with one session_end and its exports written."""
    from autocomp_core.run import runner

    async def never_stops(self):
        await anyio.sleep(3600)

    monkeypatch.setattr(runner, "WALL_GRACE_S", 0.0)
    monkeypatch.setattr(runner.Search, "run", never_stops)
    cfg = lifecycle_config(llm_server, tmp_path)
    cfg["budget"] = {"wall_s": 1.0}
    summary = await optimize_async(cfg)
    assert summary.stop_reason == "budget.wall_s"
    ended = RunStore(summary.run_dir, readonly=True).events("session_end")
    assert [e["stop_reason"] for e in ended] == ["budget.wall_s"]
    assert (summary.run_dir / "summary.json").is_file()
