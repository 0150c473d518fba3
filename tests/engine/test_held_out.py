"""The held-out check: the best programs are evaluated again on inputs the search never used;
a program right only where the search looked is labelled overfit and never reported."""

from __future__ import annotations

import pytest
import toy_harness  # the toy backend's harness (tests/toybackend): the inputs it checks
from engine_helpers import toy_config
from scripted_llm import reply

from autocomp_core.api import optimize_async
from autocomp_core.ledger.labels import audit_label
from autocomp_core.ledger.store import Candidate, Origin, RunStore
from autocomp_core.testing.llm_server import LLMTestServer

SEED = 7  # toy_config's run seed


def overfit_program() -> str:
    """sum_squares, right on exactly the inputs the search checks and times, 0 elsewhere:
    what a search that optimizes against its own check can find."""
    seen = [
        tuple(xs) for xs in toy_harness.check_inputs(SEED) + toy_harness.workload("sum_squares")
    ]
    return (
        f"SEEN = {{{', '.join(repr(s) for s in seen)}}}\n\n\n"
        "def solution(xs):\n    return sum(x * x for x in xs) if tuple(xs) in SEEN else 0\n"
    )


@pytest.mark.asyncio
async def test_an_overfit_program_is_never_reported_as_the_best(tmp_path):
    program = overfit_program()
    async with LLMTestServer(lambda r: f"```python\n{program}```") as server:
        cfg = toy_config(server, tmp_path, iterations=2, direct=True, beam_size=2)
        cfg["search"].update(plans_per_candidate=1, codes_per_plan=1)
        summary = await optimize_async(cfg)
    store = RunStore(tmp_path / "run")
    overfit = sorted(store.overfit())
    assert overfit == ["i1-b0-d0", "i2-b0-d0"]  # the program, written again in iteration 2
    for cid in overfit:
        caught = store.candidate(cid)
        assert caught is not None and caught.correct  # the search's own check accepted it
        assert caught.score < summary.data["initial_score"]  # and it looked faster
        assert all(cid not in (store.beam(i) or []) for i in (1, 2))
    assert summary.data["best_candidate"] == "root" and summary.data["speedup"] == 1.0
    held = summary.data["held_out"]
    assert held["overfit"] == overfit and held["best_held_out_score"] is None
    verdicts = store.events("held_out")
    assert [v["passed"] for v in verdicts] == [False, False]
    assert verdicts[0]["reason"].startswith("wrong_answer: ")
    report = (tmp_path / "run" / "report.md").read_text()
    assert "2 overfit (right in the search, wrong held out, never reported as the best)" in report
    assert summary.data["labels"]["overfit"] == 2 and summary.data["best_label"] == "clean"
    assert "the best program is **clean**" in report
    assert (tmp_path / "run" / "best.py").read_text() == store.candidate("root").code


@pytest.mark.asyncio
async def test_an_honest_best_passes_and_shows_both_scores(tmp_path):
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        summary = await optimize_async(toy_config(server, tmp_path, iterations=2))
    store = RunStore(tmp_path / "run")
    held = summary.data["held_out"]
    best = summary.data["best_candidate"]
    assert held["overfit"] == [] and held["checked"] >= 1
    assert store.held_out_verdicts()[best]["passed"] is True
    # the toy's metric is measured on a fixed workload, so both scores agree
    assert held["best_held_out_score"] == held["best_search_score"] == summary.data["best_score"]
    assert "held-out check: " in (tmp_path / "run" / "report.md").read_text()


@pytest.mark.asyncio
async def test_the_check_costs_about_one_evaluation_per_iteration_and_can_be_off(tmp_path):
    async with LLMTestServer(lambda r: reply(r.prompt)) as server:
        on = await optimize_async(toy_config(server, tmp_path / "on", iterations=3))
        cfg = toy_config(server, tmp_path / "off", iterations=3, held_out=False)
        off = await optimize_async(cfg)
    extra = on.data["evaluations"] - off.data["evaluations"]
    assert 1 <= extra <= 3 + 1  # the best of each iteration (and a settle at the end)
    assert not RunStore(tmp_path / "off" / "run").events("held_out")
    assert off.data["held_out"]["checked"] == 0


def test_each_audit_label_is_given_for_what_it_says():
    def cand(cid: str, score: float = 10.0, code: str | None = "x = 1") -> Candidate:
        return Candidate(cid, 1, ["root"], Origin.PLAN, code=code, score=score, eval_key="k")

    ok = {"correct": True, "metric": 10.0, "verification": {"checks": ["outputs match"]}}
    flagged = {**ok, "verification": {"flags": ["no_custom_kernel"]}}
    wrong = {"correct": False, "failure": "wrong_answer", "status": ""}
    hacked = {"correct": False, "failure": "rejected", "status": "impossible_result"}
    lost = {"correct": False, "failure": "infra_error"}
    inf = float("inf")
    assert audit_label(cand("a"), ok) == ("clean", "")
    assert audit_label(cand("a"), flagged) == ("flagged", "no_custom_kernel")
    assert audit_label(cand("a", inf), wrong) == ("refused", "wrong_answer")
    assert audit_label(cand("a", inf), hacked) == ("refused", "impossible_result")
    assert audit_label(cand("a", inf, code=None), None) == ("refused", "no program in the answer")
    assert audit_label(cand("a", inf), None, rejected="imports a forbidden module") == (
        "refused",
        "imports a forbidden module",
    )
    assert audit_label(cand("a"), ok, overfit={"a"}) == ("overfit", "failed the held-out check")
    assert audit_label(cand("a", inf), lost) == (None, "")  # the machine failed: no verdict
    assert audit_label(cand("a", inf), None) == (None, "")  # still being evaluated
