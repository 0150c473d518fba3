"""The equal-budget control: after the search, as much again spent on plain sampling (iid)
or on one self-improving conversation (agent), evaluated the same way and compared."""

from __future__ import annotations

import pytest
from engine_helpers import toy_config
from scripted_llm import reply

from autocomp_core.api import optimize_async
from autocomp_core.ledger.store import Origin, RunStore
from autocomp_core.run.runner import resume_async
from autocomp_core.suite.summary import problem_row, summarize, to_markdown
from autocomp_core.testing.llm_server import LLMTestServer, Reply


async def run_with_control(tmp_path, control: str, **budget):
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        cfg = toy_config(server, tmp_path, iterations=2, control=control)
        if budget:
            cfg["budget"] = budget
        summary = await optimize_async(cfg)
    return summary, RunStore(tmp_path / "run")


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["iid", "agent"])
async def test_the_control_spends_what_the_search_spent_within_5_percent(tmp_path, kind):
    summary, store = await run_with_control(tmp_path, kind)
    ctl = summary.data["control"]
    assert ctl["kind"] == kind and ctl["measure"] == "tokens"  # no budget bound the search
    assert abs(ctl["control_spent"] - ctl["search_spent"]) <= 0.05 * ctl["search_spent"]
    search_tokens = sum(
        u["input_tokens"] + u["output_tokens"]
        for phase, models in summary.data["llm_by_phase"].items()
        if phase != "control"
        for u in models.values()
    )
    assert ctl["search_spent"] == search_tokens
    mine = store.candidates(-1)
    assert len(mine) == ctl["samples"] >= 5
    assert all(c.origin == Origin.CONTROL and c.id.startswith("ctl-") for c in mine)
    beams = {cid for i in range(3) for cid in store.beam(i) or []}
    assert not beams & {c.id for c in mine}  # never in the search's beam
    assert not summary.data["best_candidate"].startswith("ctl-")  # never the search's best
    assert ctl["control_speedup"] and ctl["search_speedup"]
    assert ctl["search_over_control"] == pytest.approx(
        ctl["search_speedup"] / ctl["control_speedup"]
    )
    by_id = {c.id: c for c in mine}
    if kind == "iid":  # independent: every program starts from the baseline
        assert all(c.parents == ["root"] for c in mine)
    else:  # one conversation: each program follows the one before
        assert all(
            c.parents == (["root"] if c.id == "ctl-0" else [f"ctl-{int(c.id[4:]) - 1}"])
            for c in by_id.values()
        )
    report = (tmp_path / "run" / "report.md").read_text()
    assert f"- equal-budget control ({kind}, {len(mine)} programs" in report
    assert (tmp_path / "run" / "candidates" / "control").is_dir()


@pytest.mark.asyncio
async def test_a_budget_that_bound_the_search_binds_the_control_exactly(tmp_path):
    summary, _ = await run_with_control(tmp_path, "iid", llm_calls=10)
    assert summary.stop_reason == "budget.llm_calls"
    ctl = summary.data["control"]
    assert ctl["measure"] == "llm_calls" and ctl["search_spent"] == ctl["control_spent"] == 10


@pytest.mark.asyncio
async def test_a_resumed_run_keeps_its_control(tmp_path):
    first, store = await run_with_control(tmp_path, "iid")
    samples = len(store.candidates(-1))
    store.close()
    # its LLM server is gone: every answer, the control's too, comes from the journal
    again = await resume_async(tmp_path / "run", progress=False)
    assert again.data["control"] == first.data["control"]
    assert len(RunStore(tmp_path / "run").candidates(-1)) == samples


@pytest.mark.asyncio
async def test_a_control_whose_calls_all_fail_ends(tmp_path):
    """Failed calls cost nothing, so the spend never grows: the control gives up instead of
    asking for ever, and the run ends with the search's result intact."""

    def answer(r):  # the search's prompts are answered; the control's (direct) ones fail
        if "## Plan\n" in r.prompt or r.prompt.rstrip().endswith("Plan:"):
            return reply(r.prompt)
        return Reply(status=400, error_message="refused")

    async with LLMTestServer(answer) as server:
        cfg = toy_config(server, tmp_path, iterations=1, control="iid")
        summary = await optimize_async(cfg)
    ctl = summary.data["control"]
    assert ctl["samples"] == 0 and ctl["control_spent"] == 0 and ctl["control_speedup"] is None
    assert summary.stop_reason == "completed" and summary.data["speedup"] > 1


def test_the_suite_compares_the_search_and_the_control_by_geometric_means(tmp_path):
    rows = [
        {**problem_row("a", tmp_path / "a"), "speedup": 4.0, "control_speedup": 2.0},
        {**problem_row("b", tmp_path / "b"), "speedup": 9.0, "control_speedup": 9.0},
        {**problem_row("c", tmp_path / "c"), "speedup": 2.0},  # no control: left out
    ]
    summary = summarize(rows, "completed")
    ctl = summary["control"]
    assert ctl["problems"] == 2
    assert ctl["geomean_search"] == pytest.approx(6.0)
    assert ctl["geomean_control"] == pytest.approx(18**0.5)
    assert "against the equal-budget control (2 problems)" in to_markdown("suite", summary)
