"""The command line: exit codes, one-line errors before anything is spent, --json output."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from autocomp_core.sandbox import ISOLATION_ENV, isolation_level
from autocomp_core.testing.preloaded_cli import preloaded_cli

CLI = preloaded_cli()


def cli(*args, **kw):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, **kw)


@pytest.fixture
def config(tmp_path, thread_server):
    model = f"openai-compatible@{thread_server.openai_base_url}::scripted"
    path = tmp_path / "run.toml"
    path.write_text(
        f'backend = "toy"\nproblem = "sum_squares"\n[models]\nplan = ["{model}"]\n'
        "[search]\niterations = 1\nbeam_size = 1\nplans_per_candidate = 2\n"
        "codes_per_plan = 1\n"
    )
    return path


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--set", "search.beam_size=0"], "search.beam_size"),
        (["--set", "search.bogus=1"], "search.bogus: unknown key"),
        (["--backend", "nosuch"], "unknown backend 'nosuch'"),
        (["--problem", "nosuch"], "unknown problem 'nosuch'"),
        (["--set", "hardware.line_cost=0"], "hardware.line_cost"),
        (["--set", "hardware.cores=4"], "hardware.cores: unknown key"),
        (
            ["--set", "backend_options.delay=1"],
            "backend_options.delay: unknown key (known: delay_s, claimed_lower_bound, declare_lower_bound)",
        ),
        (
            ["--set", "backend_options.delay_s='soon'"],
            "backend_options.delay_s: Input should be a valid number",
        ),
        (["--model", "nosuchprovider::m"], "models:"),
        (["--model", "anthropic::claude-sonnet-4-5"], "ANTHROPIC_API_KEY"),
        (
            [
                "--set",
                "search.hw_feedback_probability=0.5",
                "--set",
                "search.direct=true",
                "--set",
                "search.exhaustive_first_iterations=1",
            ],
            "search.direct",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line_before_spending(
    config, thread_server, tmp_path, extra, needle
):
    env = {
        k: v
        for k, v in __import__("os").environ.items()
        if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    env["HOME"] = str(tmp_path)  # no key file either
    out = cli("optimize", str(config), "--run-dir", str(tmp_path / "r"), *extra, env=env)
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], out.stderr
    assert thread_server.request_count == 0
    assert not (tmp_path / "r").exists()


def test_malformed_toml_exits_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("backend = \n")
    out = cli("optimize", str(bad))
    assert out.returncode == 2 and "malformed TOML" in out.stderr


def test_optimize_then_report_and_json(config, tmp_path):
    out = cli("optimize", str(config), "--run-dir", str(tmp_path / "r"), "--quiet", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["stop_reason"] == "completed" and data["best_score"] <= data["initial_score"]
    assert data["isolation"] == isolation_level()  # the sandbox level the candidates ran under
    report = cli("report", str(tmp_path / "r"))
    assert report.returncode == 0 and "# autocomp run: toy / sum_squares" in report.stdout
    assert f"- sandbox isolation: {isolation_level()}" in report.stdout
    again = cli("optimize", str(config), "--run-dir", str(tmp_path / "r"))
    assert again.returncode == 2 and "already holds a run" in again.stderr


def test_plain_progress_lines_when_not_a_terminal(config, tmp_path):
    out = cli("optimize", str(config), "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 0
    progress = [line for line in out.stderr.splitlines() if line.startswith("[autocomp]")]
    assert any("iteration 1/1 done" in line and "evaluations" in line for line in progress)
    assert "\r" not in out.stderr


def test_log_json_lines(config, tmp_path):
    out = cli(
        "--log-json",
        "optimize",
        str(config),
        "--run-dir",
        str(tmp_path / "r"),
        "--set",
        "search.plans_per_candidate=1",
        "--set",
        "llm.max_retries=0",
        "--model",
        "openai-compatible@http://127.0.0.1:9/v1::down",
    )
    logs = [json.loads(line) for line in out.stderr.splitlines() if line.startswith("{")]
    assert logs and all("event" in entry and "level" in entry for entry in logs)


def test_backends_problems_eval_json(tmp_path):
    backends = json.loads(cli("backends", "--json").stdout)
    toy = next(b for b in backends["backends"] if b["name"] == "toy")
    assert toy["healthy"] and toy["problems"] == 4
    problems = json.loads(cli("problems", "toy", "--json").stdout)
    first = next(p for p in problems if p["id"] == "sum_squares")
    assert first["description"] and first["baseline"].endswith("sum_squares.py")
    good = cli("eval", "toy", "sum_squares", first["baseline"], "--json")
    assert good.returncode == 0
    data = json.loads(good.stdout)
    assert {"correct", "metric", "unit", "failure", "feedback"} <= set(data)
    assert data["correct"] and data["unit"] == "lines"
    assert data["seed"] == 0 and data["verification"]["seeds"] == [0]  # what the verdict rests on
    wrong = tmp_path / "wrong.py"
    wrong.write_text("def solution(xs):\n    return 0\n")
    bad = cli("eval", "toy", "sum_squares", str(wrong), "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["failure"] == "wrong_answer"
    unknown = cli("eval", "toy", "nosuch", str(wrong))
    assert unknown.returncode == 2 and "unknown problem" in unknown.stderr


def test_doctor_names_missing_tools():
    out = cli("doctor", "toy")
    assert out.returncode == 0 and "toy:" in out.stdout and "[ok" in out.stdout
    assert out.stdout.startswith(f"sandbox isolation: {isolation_level()}")


def test_doctor_says_when_candidates_run_without_namespaces():
    weakest = "uid" if os.geteuid() == 0 else "none"
    out = cli("doctor", "toy", env={**os.environ, ISOLATION_ENV: weakest})
    assert out.stdout.startswith(
        f"sandbox isolation: {weakest}  -> candidates run without namespaces"
    ), out.stdout


def test_models_lists_and_checks_each_model(thread_server, tmp_path):
    model = f"openai-compatible@{thread_server.openai_base_url}::scripted"
    out = cli(
        "models",
        "--model",
        model,
        "--model",
        "openai-compatible@http://127.0.0.1:9/v1::nobody-home",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["status"] for r in rows] == ["answers", "unreachable"]
    assert thread_server.request_count >= 1
    keyless = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    home = tmp_path / "home"  # no key file either
    text = cli(
        "models",
        "--model",
        model,
        "--model",
        "openai::gpt-5-mini",
        env={**keyless, "HOME": str(home)},
    ).stdout
    lines = text.strip().splitlines()
    assert lines[0].startswith(model) and "  answers  (" in lines[0]
    assert lines[1].startswith("openai::gpt-5-mini") and "not usable" in lines[1]


def test_models_prices_shows_each_price_and_its_source_without_asking(thread_server):
    model = f"openai-compatible@{thread_server.openai_base_url}::scripted"
    before = thread_server.request_count
    out = cli("models", "--prices", "--model", model, "--model", "openai::gpt-5-mini", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["model"]: r for r in json.loads(out.stdout)}
    assert rows[model]["input"] == 0 and rows[model]["source"].startswith("self-hosted at 127.")
    assert rows["openai::gpt-5-mini"]["source"] == "price_lists/openai.toml"
    assert thread_server.request_count == before  # no call was made
    text = cli("models", "--prices", "--model", "together::unlisted/m").stdout
    assert "no price: a usd budget is refused" in text


def test_a_bug_in_a_provider_is_reported_as_a_bug(config, tmp_path):
    """Not a failed LLM call the run goes on after: one line without -v, the traceback
    with -v; the journal records no failed call for it."""
    args = [
        "optimize",
        str(config),
        "--set",
        'plugins=["buggy_llm_plugin"]',
        "--model",
        "buggy::m",
        "--quiet",
    ]
    out = cli(*args, "--run-dir", str(tmp_path / "r"))
    assert out.returncode == 1
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert lines[-1] == (
        "error: internal error (a bug): TypeError: object of type 'CallParams' "
        "has no len() (run with -v for the traceback)"
    )
    assert "Traceback" not in out.stderr
    from autocomp_core.ledger.store import RunStore

    store = RunStore(tmp_path / "r")
    assert store.count("llm_calls") == 0 and not store.events("llm_error")
    store.close()
    verbose = cli("-v", *args, "--run-dir", str(tmp_path / "v"))
    assert verbose.returncode == 1
    assert "Traceback (most recent call last)" in verbose.stderr
    assert "buggy_llm_plugin.py" in verbose.stderr and "TypeError" in verbose.stderr
