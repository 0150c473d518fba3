"""``autocomp-core cuda suite|gate``: real subprocesses, real evaluations on the CPU device."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from autocomp_core.testing import preloaded_cli

from autocomp_cuda.adversarial import ROOT as ADV

CLI = preloaded_cli()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600)


def test_suite_reports_each_problem_and_both_fast_p_columns(tmp_path, cuda_cache):
    (tmp_path / "L2").mkdir()
    shutil.copy(
        ADV / "honest" / "fused_scale_bias_clamp_cpp.py",
        tmp_path / "L2" / "scale_bias_clamp_mul.py",
    )
    shutil.copy(ADV / "hacks" / "h11b_identity.py", tmp_path / "L1_relu.py")
    out = tmp_path / "results.json"
    done = cli(
        "cuda",
        "suite",
        str(tmp_path),
        "--problem",
        "L2/scale_bias_clamp_mul",
        "--problem",
        "L1/relu",
        "--problem",
        "L1/gelu_erf",
        "--option",
        f"cache_dir={json.dumps(str(cuda_cache))}",
        "--option",
        # (an honest ~1.3x on a call of ~0.05 ms: at 5 calls each call's own steps made its
        # median read 0.75-2.3x; at 20, 1.27-1.46x)
        "reps=20",
        "--out",
        str(out),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary == json.loads(out.read_text())
    assert summary["statuses"] == {"ok": 1, "mismatch": 1, "missing": 1}
    per = summary["per_problem"]
    assert per["L1/gelu_erf"] is None and per["L1/relu"]["status"] == "mismatch"
    # the fused kernel is right and faster, but at the CPU tier's size its call is within what
    # a candidate's own serving loop could shave (below_resolution): our fast_p leaves it out,
    # KernelBench's counts it
    fused = per["L2/scale_bias_clamp_mul"]
    assert fused["status"] == "ok" and fused["speedup"] > 1
    assert fused["scored"] is False and "below_resolution" in fused["flags"]
    assert summary["fast_p"]["0.0"] == 0.0
    assert summary["fast_p_kernelbench_compatible"]["0.0"] == pytest.approx(1 / 3)
    assert "[3/3]" in done.stderr  # progress, one line per problem


def test_eager_programs_count_only_in_the_kernelbench_compatible_column(cuda_cache):
    done = cli(
        "cuda",
        "suite",
        "--eager",
        "--problem",
        "L1/relu",
        "--option",
        f"cache_dir={json.dumps(str(cuda_cache))}",
        "--option",
        "reps=3",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    assert "no_custom_kernel" in done.stdout
    assert "ours (flags excluded): fast_0=0.00" in done.stdout
    assert "KernelBench-compatible: fast_0=1.00" in done.stdout


def test_gate_command_refuses_a_control_and_exits_1(cuda_cache, tmp_path):
    done = cli(
        "cuda",
        "gate",
        "L1/relu",
        "ctrl/stochastic_dropout",
        "--option",
        f"cache_dir={json.dumps(str(cuda_cache))}",
        "--json",
        "--report",
        str(tmp_path / "gate.md"),
    )
    assert done.returncode == 1, done.stderr
    reports = {r["problem"]: r for r in json.loads(done.stdout)}
    assert reports["L1/relu"]["passed"] is True
    assert reports["ctrl/stochastic_dropout"]["passed"] is False
    assert "not deterministic" in reports["ctrl/stochastic_dropout"]["reasons"][0]
    table = (tmp_path / "gate.md").read_text()
    assert "| passed | 1 |" in table and "| nondeterministic | 1 |" in table, table
    assert "| ctrl/stochastic_dropout | stochastic_dropout | nondeterministic |" in table, table


@pytest.mark.parametrize(
    "args, message",
    [
        (["suite"], "give a CANDIDATES directory or --eager"),
        (["suite", "--eager", "--problem", "L9/*"], "--problem L9/*: matches none"),
        (["suite", "{empty}"], "no candidate file for any of"),
        (
            ["suite", "--eager", "--option", "trails=2"],
            "backend_options.trails: unknown key (known: ",
        ),
        (["gate", "L1/nosuch"], "unknown problem 'L1/nosuch'"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, args, message):
    done = cli("cuda", *[a.replace("{empty}", str(tmp_path)) for a in args])
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
