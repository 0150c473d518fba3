"""``optimize-suite`` on this machine: every problem in its own run directory, one LLM client
and one budget for all, a summary whose numbers are the HTML report's, resume, and bad
input refused before anything is spent. (On a Ray cluster: ``tests/scaleout``.)"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from autocomp_core import ConfigError
from autocomp_core.engine.progress import Progress
from autocomp_core.ledger.accounting import Ledger
from autocomp_core.ledger.store import Candidate
from autocomp_core.report.data import find_runs, run_data
from autocomp_core.report.page import report_payload
from autocomp_core.suite import (
    SUITE_FILE,
    IterationPool,
    RunIterations,
    SuiteSpending,
    _prepare_all,
    optimize_suite,
    run_dir_names,
    select_problems,
)
from autocomp_core.suite.progress import SuiteProgress
from autocomp_core.suite.summary import fast_p, geometric_mean, problem_row, summarize, to_markdown
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()
TOY_PROBLEMS = ["sum_squares", "prefix_max", "count_pairs", "count_negatives"]


def shared_config(server, **search) -> dict:
    return {
        "backend": "toy",
        "seed": 3,
        "models": {"plan": [f"openai-compatible@{server.openai_base_url}::scripted"]},
        "search": {
            "iterations": 1,
            "beam_size": 1,
            "plans_per_candidate": 2,
            "codes_per_plan": 1,
            **search,
        },
        "llm": {"max_retries": 1, "timeout_s": 30, "max_concurrency": 2},
        "playbook": {"enabled": False},  # the suite's runs would learn from each other
    }


@pytest.mark.asyncio
async def test_a_suite_runs_every_problem_and_its_numbers_are_the_reports(llm_server, tmp_path):
    suite = tmp_path / "suite"
    result = await optimize_suite(
        shared_config(llm_server), TOY_PROBLEMS, suite, concurrency=2, progress=False
    )
    data = result.data
    assert data["problems"] == 4 and data["stop_reason"] == "completed"
    assert sorted(p.name for p in find_runs(suite)) == sorted(TOY_PROBLEMS)
    rows = {r["problem"]: r for r in data["per_problem"]}
    report_rows = {
        r["problem"]: r
        for r in report_payload([(p.name, p) for p in find_runs(suite)], "suite", suite=True)[
            "rows"
        ]
    }
    for problem, row in rows.items():
        run = run_data(suite / problem)["summary"]
        exported = json.loads((suite / problem / "summary.json").read_text())
        assert row["stop_reason"] == "completed"
        assert (
            row["speedup"]
            == run["speedup"]
            == report_rows[problem]["speedup"]
            == pytest.approx(exported["speedup"])
        )
        assert (row["baseline"], row["best"]) == (run["initial_score"], run["best_score"])
        assert (row["llm_calls"], row["tokens"], row["cost_usd"]) == (
            run["llm_calls"],
            run["tokens"],
            run["cost_usd"],
        )
    # the scripted LLM writes sum_squares programs: only that problem gets faster
    assert rows["sum_squares"]["speedup"] > 1 and rows["sum_squares"]["correct"]
    assert all(rows[p]["speedup"] == 1.0 and not rows[p]["correct"] for p in TOY_PROBLEMS[1:])
    # the page's geometric mean: over the runs with a speedup
    page_speedups = [r["speedup"] for r in report_rows.values() if r["speedup"]]
    assert data["geomean_speedup"] == pytest.approx(
        math.exp(sum(map(math.log, page_speedups)) / len(page_speedups))
    )
    assert data["fraction_correct"] == 0.25
    expected_fast = {
        "1": 0.25,
        "1.5": 0.25 * (rows["sum_squares"]["speedup"] > 1.5),
        "2": 0.25 * (rows["sum_squares"]["speedup"] > 2),
    }
    assert data["fast_p"] == expected_fast
    assert data["llm_calls"] == sum(r["llm_calls"] for r in rows.values()) > 8
    assert data["fast_p_vs"] == {}
    assert json.loads((suite / "summary.json").read_text())["per_problem"] == data["per_problem"]
    text = (suite / "summary.md").read_text()
    assert text.count("| completed |") == 4 and "fast_1 25%" in text
    assert f"geometric-mean speedup: {data['geomean_speedup']:.2f}x" in text
    # every best is clean (the baselines of the other problems too): none listed for review
    assert {r["best_label"] for r in rows.values()} == {"clean"}
    assert data["not_clean"] == [] and "best program not clean" not in text
    best = rows["sum_squares"]
    assert best["held_out_best"] == best["best"]  # checked on held-out inputs, same workload


def test_the_suite_summary_lists_every_problem_whose_best_is_not_clean() -> None:
    rows = [
        {**problem_row("a", Path("nowhere-a")), "best_label": "clean"},
        {**problem_row("b", Path("nowhere-b")), "best_label": "flagged"},
        {**problem_row("c", Path("nowhere-c")), "best_label": "overfit"},
    ]
    rows[0]["tokens_saved_at_bound"] = 1234
    summary = summarize(rows, "completed")
    assert summary["not_clean"] == ["b", "c"]
    assert "stopping at the bound saved about 1,234 tokens" in to_markdown("suite", summary)
    assert (
        "**best program not clean** (flagged, refused or overfit: review before trusting): b, c"
        in (to_markdown("suite", summary))
    )


def test_summary_rules() -> None:
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([]) is None
    assert fast_p([1.0, 1.6, None, 2.5], 1.5) == 0.5  # a problem without a speedup is not fast
    assert fast_p([1.0, 1.0], 1.0) == 0.0  # as fast as the baseline is not faster
    assert run_dir_names(["gemm", "a/b/gemm.py", "x y", "gemm"]) == [
        "gemm",
        "gemm-2",
        "x_y",
        "gemm-3",
    ]


@pytest.mark.asyncio
async def test_the_suite_shares_one_budget(llm_server, tmp_path):
    config = shared_config(llm_server)
    config["budget"] = {"llm_calls": 5}
    result = await optimize_suite(
        config, TOY_PROBLEMS, tmp_path / "suite", concurrency=2, progress=False
    )
    rows = result.data["per_problem"]
    assert result.data["stop_reason"] == "budget.llm_calls"
    # each run alone would make 4 calls (16 in all); two runs at once stop at the budget
    # exactly, because the calls in flight in every run count against it together
    assert result.data["llm_calls"] == 5
    assert [r["stop_reason"] for r in rows][-1] == "budget.llm_calls (not started)"
    assert any(r["stop_reason"] == "budget.llm_calls" for r in rows)


@pytest.mark.asyncio
async def test_bad_input_is_refused_before_anything_is_spent(llm_server, tmp_path):
    suite = tmp_path / "suite"
    with pytest.raises(ConfigError, match=r"^problem nope: problem: unknown problem 'nope'"):
        await optimize_suite(shared_config(llm_server), ["sum_squares", "nope"], suite)
    with pytest.raises(ConfigError, match=r"search\.beam_size"):
        await optimize_suite(shared_config(llm_server, beam_size=0), ["sum_squares"], suite)
    with pytest.raises(ConfigError, match="remove problem and run_dir"):
        await optimize_suite({**shared_config(llm_server), "problem": "x"}, ["sum_squares"], suite)
    assert llm_server.request_count == 0 and not suite.exists()
    with pytest.raises(ConfigError, match="one of them"):
        select_problems(shared_config(llm_server), ["a"], True, None)
    assert select_problems(shared_config(llm_server), [], True, None) == TOY_PROBLEMS


def test_a_folder_of_kernelbench_files_is_a_suite_of_the_cuda_backend(tmp_path):
    folder = tmp_path / "level2"
    folder.mkdir()
    model = (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return torch.relu(x) {op}\n\n\n"
        "def get_inputs():\n    return [torch.randn(8, 16)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    (folder / "1_relu_add.py").write_text(model.format(op="+ 1"))
    (folder / "2_relu_mul.py").write_text(model.format(op="* 2"))
    (folder / "notes.txt").write_text("not a problem")
    chosen = select_problems({"backend": "cuda"}, [], False, folder)
    assert chosen == [str(folder / "1_relu_add.py"), str(folder / "2_relu_mul.py")]
    assert run_dir_names(chosen) == ["1_relu_add", "2_relu_mul"]
    plan = {
        "problems": [{"problem": p, "dir": d} for p, d in zip(chosen, run_dir_names(chosen))],
        "config": {
            "backend": "cuda",
            "models": {"plan": ["openai-compatible@http://127.0.0.1:9/v1::m"]},
        },
    }
    preps = _prepare_all(plan, tmp_path / "suite")  # each file loads as a problem
    assert [p.problem.baseline_path for p in preps] == [Path(c) for c in chosen]
    assert preps[1].client is preps[0].client and preps[1].executor is preps[0].executor
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"holds no \.py file"):
        select_problems({"backend": "cuda"}, [], False, empty)


def test_the_cli_runs_a_suite_and_resumes_it_without_spending(thread_server, tmp_path):
    suite = tmp_path / "suite"
    args = [
        "optimize-suite",
        "--backend",
        "toy",
        "sum_squares",
        "count_negatives",
        "--suite-dir",
        str(suite),
        "--model",
        f"openai-compatible@{thread_server.openai_base_url}::scripted",
        "--iterations",
        "1",
        "--plans",
        "2",
        "--codes",
        "1",
        "--quiet",
        "--json",
    ]
    out = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout)
    assert (suite / SUITE_FILE).is_file() and first["problems"] == 2
    again = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "already holds a suite" in again.stderr
    before = thread_server.request_count
    resumed = subprocess.run(
        [*CLI, "resume", str(suite)], capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert thread_server.request_count == before
    assert "| sum_squares | completed |" in resumed.stdout
    assert json.loads((suite / "summary.json").read_text())["per_problem"] == first["per_problem"]
    page = subprocess.run(
        [*CLI, "report", str(suite), "--html"], capture_output=True, text=True, timeout=300
    )
    assert page.returncode == 0 and (suite / "report.html").is_file()


def test_suite_progress_shows_done_running_waiting_and_best_speedups() -> None:
    spending = SuiteSpending()
    display = SuiteProgress(["a", "b", "c", "d"], spending, title="toy")
    runs = {}
    for name, best in (("a", 50.0), ("b", 80.0)):
        ledger = Ledger()
        spending.ledgers[name] = ledger
        runs[name] = Progress(ledger=ledger, unit="lines", total_iterations=2)
        display.started(name, runs[name])
        runs[name].initial(
            [Candidate(id="root", iteration=0, parents=[], origin="root", score=100.0)]
        )
        runs[name].evaluated(
            Candidate(id="x", iteration=1, parents=["root"], origin="plan", score=best)
        )
    display.finished("a", "completed")
    assert display.counts().startswith("1 done, 1 running, 2 waiting;")
    assert display.best_speedups() == [("a", 2.0), ("b", 1.25)]
    console = Console(record=True, width=120)
    console.print(display)
    text = console.export_text()
    assert "1 done, 1 running, 2 waiting" in text and "a 2.00x, b 1.25x" in text
    assert "completed" in text and "running" in text


@pytest.mark.asyncio
async def test_iterations_a_problem_left_at_the_bound_go_to_one_still_going(llm_server, tmp_path):
    """sum_squares reaches its bound's 1.5% (16499 -> 1224 -> 618 lines, bound 12) after two
    of its three iterations and leaves the third to the pool; prefix_max, run after it (one
    problem at a time), is the only one still going and gets it: four iterations."""
    suite = tmp_path / "suite"
    config = shared_config(llm_server, iterations=3, stop_at_bound=0.015)
    config["search"].update(beam_size=2, plans_per_candidate=3, codes_per_plan=2)
    result = await optimize_suite(
        config, ["sum_squares", "prefix_max"], suite, concurrency=1, progress=False
    )
    rows = {r["problem"]: r for r in result.data["per_problem"]}
    assert rows["sum_squares"]["stop_reason"] == "stop_at_bound"
    assert rows["prefix_max"]["iterations_granted"] == 1
    prefix = json.loads((suite / rows["prefix_max"]["run_dir"] / "summary.json").read_text())
    assert prefix["iterations_completed"] == 4
    assert "its iterations went to those with the most headroom: prefix_max +1" in (
        (suite / "summary.md").read_text()
    )


def test_the_pool_gives_an_iteration_to_the_run_with_the_most_headroom_only() -> None:
    pool = IterationPool()
    near, far, unbounded = (RunIterations(pool, name) for name in ("near", "far", "none"))
    near.headroom(0.1)
    far.headroom(2.0)
    unbounded.headroom(None)
    assert not far.grant()  # nothing released yet
    RunIterations(pool, "done").release(2)
    assert not near.grant() and not unbounded.grant()  # far has more headroom
    assert far.grant() and far.grant() and not far.grant()  # two released, two granted
    far.leave()
    RunIterations(pool, "done2").release(1)
    assert near.grant()  # far is gone: near has the most headroom now
