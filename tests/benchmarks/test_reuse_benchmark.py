"""``benchmarks/reuse.py`` and its problems: the toy backend's shape siblings of
``sum_squares`` (``sum_squares-<N>``); the scripted planner reading the playbook's section
as the engine writes it; and one seed at a few calls, where the runs it compares really
differ in what the benchmark says they differ in, and its table reads them right."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from toy_plugin import ToyBackend

from autocomp_core import EvalContext
from autocomp_core.engine.lessons import lessons
from autocomp_core.engine.reuse import donor_schedule
from autocomp_core.ledger.playbook import Entry, Playbook

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark():
    spec = importlib.util.spec_from_file_location("reuse_benchmark", ROOT / "benchmarks/reuse.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = load_benchmark()


def test_shape_siblings_are_one_family_and_stay_unlisted():
    backend = ToyBackend()
    assert [p.id for p in backend.problems()] == [
        "sum_squares",
        "prefix_max",
        "count_pairs",
        "count_negatives",
    ]
    sibling = backend.load_problem("sum_squares-512")
    assert sibling.metadata == {"family": "sum_squares", "shapes": [512]}
    assert sibling.baseline_code == backend.load_problem("sum_squares").baseline_code
    for bad in ("sum_squares-0", "sum_squares-5000", "prefix_max-8"):
        with pytest.raises(KeyError, match="unknown problem"):
            backend.load_problem(bad)


@pytest.mark.asyncio
async def test_a_siblings_score_grows_with_its_length():
    backend = ToyBackend()
    metrics = []
    for size in (8, 64):
        problem = backend.load_problem(f"sum_squares-{size}")
        result = await backend.evaluate(problem, problem.baseline_code, EvalContext(timeout_s=60))
        assert result.correct
        metrics.append(result.metric)
    assert metrics[1] > 4 * metrics[0]  # three lists of 64 against three of 8


def test_the_planner_reads_the_playbooks_section_as_the_engine_writes_it():
    entry = Entry(
        backend="toy",
        family="sum_squares",
        problem="sum_squares-64",
        shapes=[64],
        dtypes=[],
        run="a/run",
        speedup=30.0,
        schedule=[{"plan": "Apply the counted transformation.", "gain": 2.0}],
        failures=[
            {"plan": "Apply the symmetric transformation.", "kind": "wrong_answer", "reason": ""},
            {"plan": "Apply the counted transformation.", "kind": "wrong_answer", "reason": ""},
        ],
    )
    prompt = f"# applied: for_in,multiply\n{lessons([entry], 1500)}\n## Optimization menu\nPlan:"
    assert bench.lessons(prompt) == ({"counted"}, {"symmetric"})
    options = ["counted", "generator", "no_temp", "symmetric"]
    assert {bench.plan_pick(options, prompt, h) for h in range(20)} == {"counted"}
    without = prompt.replace("counted", "other")  # nothing it names worked: avoid the failed
    assert "symmetric" not in {bench.plan_pick(options, without, h) for h in range(20)}
    assert "symmetric" in {bench.plan_pick(options, "Plan:", h) for h in range(20)}


@pytest.mark.slow
def test_one_seed_of_the_benchmark(tmp_path):
    args = bench.parse(
        ["--iterations", "2", "--calls", "14", "--budget", "8", "--donor-calls", "24"]
        + ["--siblings", "8", "--error-rate", "0"]
    )
    result = bench.anyio.run(bench.seed_runs, 1, args, tmp_path)
    donor = result["donor"]
    schedule = [s.plan for s in donor_schedule(donor.run_dir).steps]
    assert schedule and donor.best > 1
    book = Playbook(tmp_path / "seed1" / "donor-playbook.sqlite")
    (entry,) = book.entries()  # the donor wrote it; no sibling run wrote into it
    book.close()
    assert [s["plan"] for s in entry.schedule] == schedule
    runs = result["siblings"][8]
    assert runs["target"] > 1
    for length, calls in (("long", 14), ("fixed", 8)):
        plain, reuse, playbook = (runs[length][n] for n in ("plain", "reuse", "playbook"))
        # a reuse run starts with the donor's plans: its first beam holds them
        assert bench.reused_first_beam(reuse.run_dir)
        assert set(bench.reused_first_beam(reuse.run_dir)) <= set(schedule)
        assert not bench.reused_first_beam(plain.run_dir)
        # only the playbook run's planner hears what the donor learned
        assert playbook.plan_prompts and all(bench.LESSONS in p for p in playbook.plan_prompts)
        assert schedule[0] in playbook.plan_prompts[0]
        assert not any(bench.LESSONS in p for p in plain.plan_prompts + reuse.plan_prompts)
        for run in (plain, reuse, playbook):
            assert run.best >= 1 and run.calls <= calls
            assert run.calls_to_target is None or run.calls_to_target <= run.calls
    # with no errors the donor's plans reach its program again: the target, at once
    reuse = runs["long"]["reuse"]
    assert reuse.calls_to_target is not None and reuse.calls_to_target <= len(schedule)
    text = bench.table([result], args)
    assert text.count("\n    8 ") == 1 and "plain/reuse" in text and "pb/plain" in text
