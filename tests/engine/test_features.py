"""Every search feature, each driven end to end on the toy backend and checked in the
journal: what the prompts contained, which calls were made, what entered the beam."""

from __future__ import annotations

import json

import pytest
from engine_helpers import toy_config
from scripted_llm import VARIANTS, reply

from autocomp_core.api import optimize_async
from autocomp_core.errors import ConfigError
from autocomp_core.ledger.store import RunStore
from autocomp_core.testing.llm_server import LLMTestServer

pytestmark = pytest.mark.asyncio


async def run(server, tmp_path, **search):
    summary = await optimize_async(toy_config(server, tmp_path, **search))
    store = RunStore(tmp_path / "run")
    return summary, store


def calls(store, phase=None):
    return [c for c in store.llm_calls() if phase is None or c["phase"] == phase]


def prompt(call):
    r = call["request"]
    return f"{r['static']}\n\n{r['dynamic']}"


async def test_call_volume_follows_beam_plans_and_codes(llm_server, tmp_path):
    _, store = await run(
        llm_server, tmp_path, iterations=1, plans_per_candidate=3, codes_per_plan=2
    )
    assert len(calls(store, "plan")) == 3 and len(calls(store, "code")) == 6
    assert len(store.candidates(1)) == 6


async def test_menu_dropout_keeps_expected_fraction(llm_server, tmp_path):
    _, store = await run(
        llm_server,
        tmp_path,
        iterations=1,
        plans_per_candidate=8,
        codes_per_plan=1,
        menu_keep_probability=0.25,
    )
    from toy_plugin import ToyBackend  # the toy backend's menu

    menu = ToyBackend().knowledge(None).menu
    shown = [sum(item in prompt(c) for item in menu) for c in calls(store, "plan")]
    assert all(n >= 1 for n in shown) and sum(shown) < len(menu) * len(shown) * 0.6
    _, full = await run(
        llm_server,
        tmp_path / "full",
        iterations=1,
        plans_per_candidate=2,
        codes_per_plan=1,
        menu_keep_probability=1.0,
    )
    assert all(all(item in prompt(c) for item in menu) for c in calls(full, "plan"))


async def test_score_feedback_probability(llm_server, tmp_path):
    _, on = await run(
        llm_server,
        tmp_path / "on",
        iterations=1,
        plans_per_candidate=2,
        codes_per_plan=1,
        score_feedback_probability=1.0,
    )
    _, off = await run(
        llm_server,
        tmp_path / "off",
        iterations=1,
        plans_per_candidate=2,
        codes_per_plan=1,
        score_feedback_probability=0.0,
    )
    assert all("Measured lines" in prompt(c) for c in calls(on, "plan"))
    assert not any("Measured lines" in prompt(c) for c in calls(off))


async def test_hw_feedback_probability(llm_server, tmp_path):
    _, store = await run(
        llm_server,
        tmp_path,
        iterations=1,
        plans_per_candidate=2,
        codes_per_plan=1,
        hw_feedback_probability=1.0,
    )
    assert all("Hardware feedback:" in prompt(c) for c in calls(store, "plan"))


async def test_ancestors_in_prompt(llm_server, tmp_path):
    _, store = await run(
        llm_server,
        tmp_path,
        iterations=2,
        plans_per_candidate=2,
        codes_per_plan=1,
        include_ancestors=True,
    )
    second = [c for c in calls(store, "plan") if "phase 2 of" in prompt(c)]
    with_history = [c for c in second if "## Original program" in prompt(c)]
    assert with_history and all("plan applied" in prompt(c) for c in with_history)
    _, plain = await run(
        llm_server, tmp_path / "plain", iterations=2, plans_per_candidate=2, codes_per_plan=1
    )
    assert not any("## Original program" in prompt(c) for c in calls(plain))


async def test_separate_plan_and_code_models_round_robin(llm_server, tmp_path):
    base = f"openai-compatible@{llm_server.openai_base_url}::"
    cfg = toy_config(llm_server, tmp_path, iterations=1, plans_per_candidate=4, codes_per_plan=2)
    cfg["models"] = {
        "plan": [base + "planner-a", base + "planner-b"],
        "code": [base + "coder-a", base + "coder-b", base + "coder-c"],
    }
    await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    plan_models = [c["model"] for c in calls(store, "plan")]
    code_models = [c["model"] for c in calls(store, "code")]
    assert sorted(set(m.rsplit("::", 1)[1] for m in plan_models)) == ["planner-a", "planner-b"]
    assert sorted(set(m.rsplit("::", 1)[1] for m in code_models)) == [
        "coder-a",
        "coder-b",
        "coder-c",
    ]
    assert plan_models.count(base + "planner-a") == 2


async def test_repair_failed_candidates_get_their_errors(llm_server, tmp_path):
    _, store = await run(
        llm_server,
        tmp_path,
        iterations=1,
        plans_per_candidate=6,
        codes_per_plan=1,
        repair_failed=True,
    )
    repairs = calls(store, "repair")
    failed = [c for c in store.candidates(1) if not c.correct and c.origin != "repair"]
    assert failed and len(repairs) == len(failed)
    assert any("SyntaxError" in prompt(c) or "expected ':'" in prompt(c) for c in repairs)
    repaired = [c for c in store.candidates(1) if c.origin == "repair"]
    assert repaired and all(c.correct for c in repaired)
    assert all(c.id.endswith("-r") for c in repaired)


async def test_no_repair_by_default(llm_server, tmp_path):
    _, store = await run(
        llm_server, tmp_path, iterations=1, plans_per_candidate=6, codes_per_plan=1
    )
    assert not calls(store, "repair")


async def test_structured_edits_are_applied(llm_server, tmp_path):
    _, store = await run(
        llm_server, tmp_path, iterations=1, plans_per_candidate=4, codes_per_plan=1, edits=True
    )
    code_calls = calls(store, "code")
    assert all(c["request"]["response_format"] == "edits" for c in code_calls)
    assert all('"edits"' in json.loads(json.dumps(c["response"]))["text"] for c in code_calls)
    codes = {c.code for c in store.candidates(1)}
    assert codes <= set(VARIANTS.values()) and len(codes) >= 2


async def test_direct_mode_skips_planning(llm_server, tmp_path):
    _, store = await run(
        llm_server, tmp_path, iterations=1, plans_per_candidate=2, codes_per_plan=2, direct=True
    )
    assert not calls(store, "plan") and len(calls(store, "direct")) == 4
    assert all(c.origin == "direct" for c in store.candidates(1))


async def test_combine_parents(llm_server, tmp_path):
    _, store = await run(
        llm_server,
        tmp_path,
        iterations=2,
        beam_size=3,
        plans_per_candidate=3,
        codes_per_plan=1,
        combine_pairs=1,
        prevent_duplicate_level=-1,
    )
    combined = [c for c in store.candidates(2) if c.origin == "combine"]
    assert len(combined) == 1 and len(combined[0].parents) == 2
    assert len(calls(store, "combine")) == 1


async def test_exhaustive_sweep_plans_once_per_menu_item(llm_server, tmp_path):
    from toy_plugin import ToyBackend

    menu = ToyBackend().knowledge(None).menu
    _, store = await run(
        llm_server, tmp_path, iterations=1, codes_per_plan=1, exhaustive_first_iterations=1
    )
    plans = calls(store, "plan")
    assert len(plans) == len(menu)
    assert all("Apply exactly this optimization" in prompt(c) for c in plans)


async def test_exhaustive_on_stagnation(tmp_path):
    """Iteration 1 makes no progress (every free plan is "wrong sum"), so iteration 2 sweeps
    the whole menu; its sweep improves the score, so iteration 3 plans freely again."""

    def stagnating(request) -> str:
        prompt = request.prompt
        if prompt.rstrip().endswith("Plan:") and "Apply exactly this optimization" not in prompt:
            return "Use the wrong sum rewrite."
        return reply(prompt)

    from toy_plugin import ToyBackend

    menu = ToyBackend().knowledge(None).menu
    async with LLMTestServer(stagnating) as server:
        _, store = await run(
            server,
            tmp_path,
            iterations=3,
            plans_per_candidate=1,
            codes_per_plan=1,
            beam_size=1,
            exhaustive_on_stagnation_iterations=1,
            exhaustive_stagnation_ratio=1.0,
        )
    stats = store.iteration_stats()
    assert stats[1]["best"] == stats[0]["best"] > stats[2]["best"]  # stagnated, then improved
    sweeps = {
        i: [
            c
            for c in calls(store, "plan")
            if f"phase {i} of" in prompt(c) and "Apply exactly this optimization" in prompt(c)
        ]
        for i in (1, 2, 3)
    }
    assert len(sweeps[2]) == len(menu) and not sweeps[1] and not sweeps[3]


def regressions(store, iteration: int) -> list[str]:
    """Members of a beam that are no faster than their parent (kept by the keep factor)."""
    found = []
    for cid in store.beam(iteration):
        c = store.candidate(cid)
        if c.iteration == iteration and c.score >= store.candidate(c.parents[0]).score:
            found.append(cid)
    return found


async def test_keep_factor_regression_budget(llm_server, tmp_path):
    """In iteration 2 many children merely repeat their parent's program (no faster): a
    keep factor of 1000 lets them into the beam, a keep factor of 1 keeps them out."""
    shape = dict(
        iterations=2,
        plans_per_candidate=6,
        codes_per_plan=1,
        beam_size=8,
        prevent_duplicate_level=-1,
    )
    _, strict = await run(llm_server, tmp_path / "a", keep_factor=1.0, **shape)
    _, loose = await run(llm_server, tmp_path / "b", keep_factor=1000.0, **shape)
    assert not regressions(strict, 2)
    assert regressions(loose, 2)
    assert not regressions(loose, 1)  # nothing is slower than the original


async def test_duplicate_prevention_levels(llm_server, tmp_path):
    _, store = await run(
        llm_server,
        tmp_path,
        iterations=1,
        plans_per_candidate=2,
        codes_per_plan=3,
        beam_size=8,
        prevent_duplicate_level=0,
    )
    beam = [store.candidate(c) for c in store.beam(1)]
    plans = [(tuple(c.parents), c.plan) for c in beam if c.origin != "root"]
    assert len(plans) == len(set(plans))


async def test_early_stop(llm_server, tmp_path):
    # one plan per iteration: the scripted variants run out of improvements long before 8
    summary, store = await run(
        llm_server,
        tmp_path,
        iterations=8,
        plans_per_candidate=1,
        codes_per_plan=1,
        beam_size=1,
        early_stop_iterations=1,
        early_stop_threshold=1.0,
    )
    stats = store.iteration_stats()
    assert summary.stop_reason == "early_stop"
    done = max(stats)
    assert done < 8 and stats[done]["best"] >= stats[done - 1]["best"]
    assert store.events("early_stop")[0]["iteration"] == done + 1


async def test_translation_phase(llm_server, tmp_path):
    cfg = toy_config(llm_server, tmp_path, iterations=2, plans_per_candidate=3, codes_per_plan=1)
    cfg["translation"] = {"iterations": 1, "score": True, "drop_original": True}
    await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    scored = [c for c in store.candidates(1) if c.translation_score is not None]
    assert scored and all(0 <= c.translation_score <= 10 for c in scored)
    assert calls(store, "translation_score")
    assert {c["request"]["temperature"] for c in calls(store, "translation_score")} == {0.0}
    first_plans = [c for c in calls(store, "plan") if "translation phase 1" in prompt(c)]
    assert first_plans
    assert "root" not in store.beam(1)


@pytest.mark.parametrize("judged,threshold,early", [(9, 9.0, True), (9, 9.5, False)])
async def test_translation_ends_early_once_the_whole_beam_is_complete(
    tmp_path, judged, threshold, early
):
    def judge(request) -> str:  # every program correct, every one judged the same
        if "Answer with a single number" in request.prompt:
            return str(judged)
        if "## Plan\n" in request.prompt:
            return f"```python\n{VARIANTS['tight loop']}```"
        return reply(request.prompt)

    async with LLMTestServer(judge) as server:
        cfg = toy_config(
            server,
            tmp_path,
            iterations=3,
            plans_per_candidate=2,
            codes_per_plan=1,
            prevent_duplicate_level=-1,
        )
        cfg["translation"] = {"iterations": 2, "complete_threshold": threshold}
        await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    assert "root" not in store.beam(1)  # a beam of translated programs only, judged 9
    second = {
        "translation" if "translation phase 2" in prompt(c) else "optimization"
        for c in calls(store, "plan")
        if "phase 2 of" in prompt(c)
    }
    assert second == {"optimization" if early else "translation"}
    assert [e["iteration"] for e in store.events("translation_complete")] == ([1] if early else [])
    assert store.iteration_stats()[3]["translation_iterations"] == (1 if early else 2)


SLOWER_TRANSLATION = (
    "def solution(xs):\n    total = 0\n    index = 0\n"
    "    while index < len(xs):\n        value = xs[index]\n"
    "        square = 0\n        for _ in range(abs(value)):\n"
    "            square = square + abs(value)\n"
    "            square = square + 0\n"
    "        total = total + square\n        index = index + 1\n"
    "    return total\n"
)  # correct, about 1.4 times the original's lines


@pytest.mark.parametrize("allowance,admitted", [(2.0, True), (1.0, False)])
async def test_regression_allowance_admits_slower_translations(tmp_path, allowance, admitted):
    """Ranked by the metric (no judge), a translated program slower than the original enters
    the beam only within the regression allowance."""

    def translating(request) -> str:
        if "translation phase" in request.prompt and "## Plan\n" in request.prompt:
            return f"```python\n{SLOWER_TRANSLATION}```"
        return reply(request.prompt)

    async with LLMTestServer(translating) as server:
        cfg = toy_config(server, tmp_path, iterations=1, plans_per_candidate=2, codes_per_plan=1)
        cfg["translation"] = {"iterations": 1, "score": False, "regression_allowance": allowance}
        await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    translated = [c for c in store.candidates(1) if c.correct]
    root = store.candidate("root")
    assert translated and all(root.score < c.score < root.score * 2.0 for c in translated)
    if admitted:
        assert set(store.beam(1)) <= {c.id for c in translated}
    else:
        assert store.beam(1) == ["root"]
        assert store.events("drop_original_skipped")


async def test_continue_from_another_run(llm_server, tmp_path):
    first, _ = await run(
        llm_server, tmp_path / "first", iterations=1, plans_per_candidate=3, codes_per_plan=1
    )
    cfg = toy_config(
        llm_server,
        tmp_path / "second",
        iterations=1,
        plans_per_candidate=2,
        codes_per_plan=1,
        continue_from=str(tmp_path / "first" / "run"),
    )
    second = await optimize_async(cfg)
    store = RunStore(tmp_path / "second" / "run")
    assert all(cid.startswith("prev-") for cid in store.beam(0))
    assert second.data["initial_score"] == first.data["best_score"]


@pytest.mark.parametrize(
    "search,translation,needle",
    [
        ({"hw_feedback_probability": 0.5}, {}, None),  # the toy backend supports it: accepted
        ({"direct": True, "exhaustive_first_iterations": 1}, {}, "search.direct"),
        ({"early_stop_threshold": 0.9}, {}, "search.early_stop_threshold"),
        ({"codes_per_combine": 3}, {}, "search.codes_per_combine"),
        ({}, {"regression_allowance": 3.0}, "translation.regression_allowance"),
        ({"stop_at_bound": 0.9, "_no_bound": True}, {}, "search.stop_at_bound: backend toy"),
    ],
)
async def test_dead_switches_are_refused_up_front(
    llm_server, tmp_path, search, translation, needle
):
    no_bound = search.pop("_no_bound", False)
    cfg = toy_config(
        llm_server, tmp_path, iterations=1, plans_per_candidate=1, codes_per_plan=1, **search
    )
    cfg["translation"] = translation
    if no_bound:
        cfg["backend_options"] = {"declare_lower_bound": False}
    if needle is None:
        await optimize_async(cfg)
        return
    with pytest.raises(ConfigError, match=needle):
        await optimize_async(cfg)
    assert llm_server.request_count == 0
    assert not (tmp_path / "run").exists()


async def test_a_run_stops_once_its_best_reaches_the_bound(llm_server, tmp_path):
    """The scripted toy search improves 16499 -> 1224 -> 618 -> 12 lines against a bound of
    12: at stop_at_bound = 0.015 (best <= 800) it ends after the second iteration."""
    full, _ = await run(llm_server, tmp_path / "full", iterations=3)
    cfg = toy_config(llm_server, tmp_path / "stop", iterations=3, stop_at_bound=0.015)
    stopped = await optimize_async(cfg)
    assert full.stop_reason == "completed" and full.data["iterations_completed"] == 3
    assert stopped.stop_reason == "stop_at_bound"
    assert stopped.data["iterations_completed"] == 2
    assert stopped.data["best_score"] <= 12 / 0.015 < full.data["initial_score"]
    assert "of the speed of the lower bound (12)" in stopped.data["stop_detail"]
    assert stopped.data["llm_calls"] < full.data["llm_calls"]
    store = RunStore(tmp_path / "stop" / "run")
    assert [e["reason"] for e in store.events("stopped")] == ["stop_at_bound"]
    saved = stopped.data["saved_at_bound"]
    assert saved["iterations"] == 1
    assert saved["tokens_estimate"] == round(stopped.data["tokens"] / 2)
    assert full.data["saved_at_bound"] is None
