"""The fidelity comparison: its statistics, and the command on the toy backend's reader."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from autocomp_core import EvalResult, FailureKind, Problem
from autocomp_core.contract.backend import Backend
from autocomp_core.fidelity import (
    FidelityUnsupported,
    MeasuredProgram,
    Outcome,
    inversions,
    log_spearman,
    outcome_of,
    ranks,
    ratio_summary,
    spearman,
    summarize,
)
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()
PROBLEM = Problem(id="p", description="", baseline_code="")


def outcome(chain, step, measured, modelled, held_out=False):
    program = MeasuredProgram(chain, step, f"s{step}", measured, PROBLEM, "", held_out)
    return Outcome(program, modelled, "" if modelled is not None else "rejected: no")


def test_ranks_average_ties():
    assert ranks([30, 10, 20, 10]) == [4, 1.5, 3, 1.5]
    assert ranks([]) == []


def test_spearman_perfect_reversed_and_tied():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)
    # ranks x (1, 2.5, 2.5, 4), y (1, 3, 2, 4): Pearson on them is 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))


def test_spearman_undefined_is_none():
    assert spearman([1], [2]) is None
    assert spearman([1, 1, 1], [1, 2, 3]) is None
    with pytest.raises(ValueError):
        spearman([1, 2], [1])


def test_log_spearman_skips_refused_programs():
    outs = [outcome("c", 0, 10, 100), outcome("c", 1, 5, 50), outcome("c", 2, 1, None)]
    assert log_spearman(outs) == pytest.approx(1)
    outs.append(outcome("c", 3, 2, 70))  # measured faster than step 1, modelled slower
    assert log_spearman(outs) == pytest.approx(0.5)  # 1 - 6 * (0 + 1 + 1) / (3 * 8)


def test_inversions_within_chains_only_with_measured_difference():
    outs = [
        outcome("a", 0, 10, 10),
        outcome("a", 1, 8, 12),  # measured 25% faster than step 0, modelled slower: inversion
        outcome("a", 2, 5, 4),
        outcome("a", 3, 4, 4),  # modelled tie, measured 25% faster than step 2: inversion
        outcome("a", 4, 1, None),  # refused: no order
        outcome("b", 0, 100, 1),  # another chain: never compared with chain a
    ]
    found = inversions(outs)
    assert [(i.faster, i.slower) for i in found] == [("1:s1", "0:s0"), ("3:s3", "2:s2")]
    assert [i.measured_diff_pct for i in found] == pytest.approx([25.0, 25.0])
    assert inversions([outcome("a", 0, 5, 1), outcome("a", 1, 5, 2)]) == []  # measured tie


def test_ratio_summary_windows():
    summary = ratio_summary([0.5, 1.0, 1.2, 2.5])
    assert summary["count"] == 4
    assert summary["median"] == pytest.approx(1.1)
    assert summary["within_0.67_1.5"] == pytest.approx(0.5)
    assert summary["within_0.5_2"] == pytest.approx(0.75)
    assert summary["geomean"] == pytest.approx((0.5 * 1.0 * 1.2 * 2.5) ** 0.25)
    assert ratio_summary([]) == {"count": 0}


def test_summarize_reports_held_out_separately():
    outs = [
        outcome("fit", 0, 10, 11),
        outcome("fit", 1, 5, 6),
        outcome("held", 0, 10, 30, held_out=True),
        outcome("held", 1, 2, 3, held_out=True),
        outcome("held", 2, 1, None, held_out=True),
    ]
    report = summarize(outs)
    assert report["chains"]["held"]["held_out"] and not report["chains"]["fit"]["held_out"]
    overall = report["overall"]
    assert overall["all"]["programs"] == 5 and overall["all"]["refused"] == 1
    assert overall["fitted"]["ratio"]["within_0.67_1.5"] == pytest.approx(1)
    assert overall["held_out"]["refused"] == 1
    assert overall["held_out"]["ratio"]["within_0.67_1.5"] == pytest.approx(0.5)
    assert json.loads(json.dumps(report)) == report


def test_refusal_reason_is_status_and_first_feedback_line():
    program = MeasuredProgram("c", 0, "s", 1.0, PROBLEM, "")
    result = EvalResult(
        False, failure=FailureKind.REJECTED, status="hack_suspected", feedback="\nwhy\nmore"
    )
    assert outcome_of(program, result).refused == "hack_suspected: why"
    opening = EvalResult(False, status="compile_error", feedback="status: compile_error\nline 3: x")
    assert outcome_of(program, opening).refused == "compile_error: line 3: x"
    assert outcome_of(program, EvalResult(False, failure=FailureKind.CRASH)).refused == "crash"
    assert outcome_of(program, EvalResult(True, metric=3.0)).modelled == 3.0


def test_backend_without_reader_says_so_in_one_line(tmp_path):
    class Bare(Backend):
        name = "bare"

        def problems(self):
            return []

        def knowledge(self, problem):
            raise NotImplementedError

        async def evaluate(self, problem, code, ctx):
            raise NotImplementedError

    with pytest.raises(FidelityUnsupported, match=r"^backend bare has no reader"):
        Bare().fidelity_programs(tmp_path)


# -- the command, on the toy backend's reader -----------------------------------------------
SLOW = (Path(__file__).parent / "toybackend" / "problems" / "sum_squares.py").read_text()
FAST = "def solution(xs):\n    return sum(x * x for x in xs)\n"
WRONG = "def solution(xs):\n    return 0\n"


def cli(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True)


@pytest.fixture
def source(tmp_path):
    folder = tmp_path / "measured"
    folder.mkdir()
    entries = []
    for chain, step, code, measured, held_out in [
        ("toy/sum", 0, SLOW, 900.0, False),
        ("toy/sum", 1, FAST, 300.0, False),
        ("toy/sum", 2, WRONG, 100.0, False),
        ("toy/held", 0, FAST, 50.0, True),  # measured faster than the slow one: modelled not
        ("toy/held", 1, SLOW, 20.0, True),
    ]:
        name = f"{chain.replace('/', '_')}_{step}.py"
        (folder / name).write_text(code)
        entries.append(
            dict(
                chain=chain,
                step=step,
                name=f"step{step}",
                measured=measured,
                problem="sum_squares",
                file=name,
                held_out=held_out,
            )
        )
    (folder / "toy-measured.json").write_text(json.dumps(entries))
    return folder


def test_fidelity_command_evaluates_every_program_through_evaluate(source, tmp_path):
    out_json = tmp_path / "fidelity.json"
    run = cli("fidelity", "toy", "--source", str(source), "--json", str(out_json), "--jobs", "2")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("[") >= 5 and "[5/5]" in run.stderr  # progress per program
    report = json.loads(out_json.read_text())
    rows = {(p["chain"], p["step"]): p for p in report["programs"]}
    assert rows[("toy/sum", 2)]["modelled"] is None
    assert rows[("toy/sum", 2)]["refused"].startswith("wrong_answer")
    # the metric is what `eval` gives the same program: no shortcut
    single = cli("eval", "toy", "sum_squares", str(source / "toy_sum_1.py"), "--json")
    assert rows[("toy/sum", 1)]["modelled"] == json.loads(single.stdout)["metric"]
    assert rows[("toy/sum", 0)]["modelled"] > rows[("toy/sum", 1)]["modelled"]
    assert report["chains"]["toy/sum"]["spearman"] == pytest.approx(1)
    held = report["chains"]["toy/held"]
    assert held["held_out"] and held["spearman"] == pytest.approx(-1)
    assert held["inversions"] == 1 and held["inversion_pairs"][0]["faster"] == "1:step1"
    assert report["overall"]["all"]["refused"] == 1
    assert report["overall"]["held_out"]["programs"] == 2
    assert "REFUSED wrong_answer" in run.stdout and "held-out chains" in run.stdout
    assert "inversion: 1:step1 measured 150.0% faster than 0:step0" in run.stdout


def test_fidelity_chain_glob_selects_chains(source, tmp_path):
    out_json = tmp_path / "f.json"
    run = cli("fidelity", "toy", "--source", str(source), "--chain", "toy/h*", "--json", out_json)
    assert run.returncode == 0, run.stderr
    assert {p["chain"] for p in json.loads(out_json.read_text())["programs"]} == {"toy/held"}


@pytest.mark.parametrize(
    "extra,needle",
    [
        ((), "no "),  # an empty folder is not the toy source: the reader names its file
        (("--chain", "nosuch/*"), "no measured program"),
    ],
)
def test_fidelity_bad_input_exits_2_with_one_line(source, tmp_path, extra, needle):
    folder = source if extra else tmp_path / "empty"
    folder.mkdir(exist_ok=True)
    run = cli("fidelity", "toy", "--source", str(folder), *extra)
    assert run.returncode == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], run.stderr
    if not extra:
        assert "toy-measured.json" in lines[0]


def test_a_program_may_be_compared_on_another_number_of_its_result():
    program = MeasuredProgram("c", 0, "s", 1.0, PROBLEM, "", metric="compiled_ms")
    both = EvalResult(True, metric=3.0, extra={"compiled_ms": 2.0})
    assert outcome_of(program, both).modelled == 2.0
    missing = outcome_of(program, EvalResult(True, metric=3.0, status="ok"))
    assert missing.modelled is None and missing.refused == "ok: no compiled_ms reported"


@pytest.mark.asyncio
async def test_programs_with_the_same_problem_and_code_share_one_evaluation():
    from autocomp_core.fidelity import evaluate_programs

    calls = []

    class Counting(Backend):
        name = "counting"

        def problems(self):
            return [PROBLEM]

        def knowledge(self, problem):
            raise NotImplementedError

        async def evaluate(self, problem, code, ctx):
            calls.append(code)
            return EvalResult(True, metric=float(len(code)), extra={"other": 7.0})

    programs = [
        MeasuredProgram("eager", 0, "a", 1.0, PROBLEM, "aa"),
        MeasuredProgram("other", 0, "a", 1.0, PROBLEM, "aa", metric="other"),
        MeasuredProgram("eager", 1, "b", 1.0, PROBLEM, "bbb"),
    ]
    outcomes = await evaluate_programs(Counting(), programs, jobs=2)
    assert sorted(calls) == ["aa", "bbb"]
    assert [o.modelled for o in outcomes] == [2.0, 7.0, 3.0]
