"""Speed of the HTML report and cost of the live dashboard, measured side by side.

1. ``autocomp-core report RUN --html`` on a 1,000-candidate run (targets: < 5 s, page
   < 5 MB). The run's journal is written through the real run store: 10 iterations of
   100 candidates (beam 4) whose programs are Gemmini convolution kernels that grow as
   a search's do (each child edits and extends its parent: 3 KB at the start, up to
   ~8 KB), a quarter of them failing with compiler output, two LLM calls each with
   realistic prompt sizes, usage and latencies. Timed as the command a user runs
   (a fresh interpreter included), best of a few.

2. A live run with and without the dashboard watching it (target: < 5% slower): the
   same toy-backend run (real sandboxed evaluations of distinct programs, LLM test
   server with latencies) runs alternately alone and with ``autocomp-core serve`` plus
   N clients that each fetch the run's full data every second (no ETag: the worst
   case; the dashboard's own page fetches only after a change). Printed: the mean wall
   time of each, their ratio, and what the clients fetched.

Usage: python benchmarks/report_dashboard.py [--candidates 1000] [--clients 20] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [
    str(ROOT / "tests" / "toybackend"),
    str(ROOT / "tests" / "engine"),
    str(Path(__file__).resolve().parent),
]
os.environ["AUTOCOMP_PLUGINS"] = "toy_plugin"
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "tests" / "toybackend"), os.environ.get("PYTHONPATH", "")]
)

import tomli_w  # noqa: E402
from engine_pipeline import distinct_programs  # noqa: E402

from autocomp_core.contract.backend import EvalResult, FailureKind  # noqa: E402
from autocomp_core.ledger.store import Candidate, RunStore  # noqa: E402
from autocomp_core.llm.types import LLMResponse, Usage  # noqa: E402
from autocomp_core.testing.llm_server import LLMTestServer  # noqa: E402

CLI = [sys.executable, "-m", "autocomp_core.cli"]
KERNEL = (ROOT / "plugins/autocomp_gemmini/autocomp_gemmini/problems/conv/baseline.c").read_text()
COMPILE_ERROR = (
    "candidate.c: In function 'solution':\ncandidate.c:{line}:{col}: error: "
    "'{name}' undeclared (first use in this function)\n  {line} |     "
    "gemmini_extended_mvin({name}, A_sp + {off}, DIM, n);\n      |     "
    "^~~~~~~~\ncandidate.c:{line}:{col}: note: each undeclared identifier is "
    "reported only once for each function it appears in\n"
)


# -- 1. the report of a 1,000-candidate run ----------------------------------------------
DIM_WORDS = ["DIM", "2*DIM", "4*DIM", "8*DIM"]


def mutate(code: str, rng: random.Random, k: int) -> str:
    """A child program: the parent with a few numbers changed and a block added, as an
    LLM's tiling, unrolling or double-buffering rewrite would."""
    lines = code.splitlines()
    for _ in range(3):
        i = rng.randrange(len(lines))
        lines[i] = re.sub(r"\bDIM\b", f"(DIM * {rng.choice([1, 2, 4])})", lines[i], count=1)
    at = rng.randrange(10, len(lines) - 5)
    block = [
        f"  // unrolled step {k}: overlap the next mvin with this compute",
        f"  for (int u{k} = 0; u{k} < {rng.choice([2, 4, 8])}; u{k}++) {{",
        f"    gemmini_extended_mvin(&input[0][u{k}][0][0], A_sp + {rng.randrange(64)} * DIM, DIM, DIM);",
        f"    gemmini_extended_preload(B_sp, C_acc + u{k} * DIM, DIM, DIM, DIM, DIM);",
        "  }",
    ]
    if len(code) < 8000:
        lines[at:at] = block
    return "\n".join(lines) + "\n"


def synthesize_run(run_dir: Path, candidates: int, iterations: int = 10, beam: int = 4) -> None:
    rng = random.Random(2026)
    store = RunStore(run_dir)
    t = time.time() - 3600
    model = "openai::gpt-5-mini"
    store.set_meta(
        "config",
        {
            "backend": "gemmini",
            "problem": "conv",
            "search": {"iterations": iterations, "beam_size": beam},
        },
    )
    store.set_meta(
        "target",
        {
            "backend": "gemmini",
            "problem": "conv",
            "unit": "cycles",
            "language": "c",
            "file_extension": ".c",
            "metric_lower_bound": 41_000.0,
            "hardware": {},
        },
    )
    store.event("session_start", pid=0, host="elsewhere")
    root = Candidate(
        id="root",
        iteration=0,
        parents=[],
        origin="root",
        code=KERNEL,
        score=1_000_000.0,
        eval_key="e-root",
    )
    store.save_evaluation("e-root", EvalResult(True, metric=root.score, unit="cycles").to_dict())
    store.save_candidate(root)
    store.save_beam(0, ["root"], {"best": root.score})
    parents = [root]
    per_iteration = candidates // iterations
    for i in range(1, iterations + 1):
        children = []
        for k in range(per_iteration):
            parent = parents[k % len(parents)]
            cid = f"i{i}-b{k % len(parents)}-p{k // 2}-c{k % 2}"
            code = mutate(parent.code, rng, k)
            failed = rng.random() < 0.25
            score = float("inf") if failed else parent.score * rng.uniform(0.7, 1.15)
            result = (
                EvalResult(
                    False,
                    failure=FailureKind.COMPILE_ERROR,
                    unit="cycles",
                    feedback=COMPILE_ERROR.format(
                        line=rng.randrange(9, 90), col=rng.randrange(5, 40), name=f"tile_{k}", off=k
                    ),
                )
                if failed
                else EvalResult(
                    True,
                    metric=score,
                    unit="cycles",
                    extra={"utilization": rng.uniform(0.1, 0.9)},
                    stdout=f"cycles: {score:.0f}\nmatmul utilization {rng.uniform(10, 90):.1f}%\n",
                )
            )
            result.duration_s = rng.uniform(2, 20)
            key = f"e-{cid}"
            store.save_evaluation(key, result.to_dict())
            c = Candidate(
                id=cid,
                iteration=i,
                parents=[parent.id],
                origin="plan",
                plan=f"Tile the output by {rng.choice([2, 4, 8])}x{DIM_WORDS[k % 4]} "
                "and double-buffer the weight loads in the scratchpad.",
                code=code,
                plan_model=model,
                code_model=model,
                score=score,
                eval_key=key,
            )
            store.save_candidate(c)
            children.append(c)
            for phase, out in (("plan", 120), ("code", 1500)):
                t += rng.uniform(0.5, 3)
                resp = LLMResponse(
                    text="x" * out,
                    model=model,
                    usage=Usage(
                        input_tokens=rng.randrange(3000, 9000),
                        output_tokens=out // 4,
                        cached_tokens=2000,
                    ),
                    cost_usd=0.002,
                    duration_s=rng.uniform(3, 40),
                )
                store.record_llm(
                    f"{cid}-{phase}", model, phase, True, {"prompt": "p" * 16000}, resp.to_dict()
                )
        parents = sorted([c for c in children if c.correct] + parents, key=lambda c: c.score)[:beam]
        store.save_beam(
            i, [c.id for c in parents], {"best": parents[0].score, "children": len(children)}
        )
    store.event("session_end", stop_reason="completed")
    store.close()


def bench_report(candidates: int, tries: int = 3) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        synthesize_run(run_dir, candidates)
        times, cpu = [], []
        for _ in range(tries):
            started, before = time.perf_counter(), _children_cpu()
            subprocess.run(
                [*CLI, "report", str(run_dir), "--html"], check=True, capture_output=True
            )
            times.append(time.perf_counter() - started)
            cpu.append(_children_cpu() - before)
        size = (run_dir / "report.html").stat().st_size
        code_bytes = sum(len(c.code or "") for c in _all(run_dir))
    print(
        f"report --html, {candidates} candidates ({code_bytes / 1e6:.1f} MB of programs): "
        f"{min(times):.2f} s best of {tries} (target < 5 s, ratio {min(times) / 5:.2f}; "
        f"CPU {min(cpu):.2f} s, machine load {os.getloadavg()[0]:.1f}); "
        f"page {size / 1e6:.2f} MB (target < 5 MB, ratio {size / 5e6:.2f})"
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _all(run_dir: Path) -> list[Candidate]:
    store = RunStore(run_dir)
    try:
        return store.candidates()
    finally:
        store.close()


# -- 2. a live run with and without 20 dashboard clients ---------------------------------
CLIENTS = """
import asyncio, sys, time, aiohttp
base, name, n, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
import pathlib
async def client(session, stats):
    while not pathlib.Path(stop).exists():
        async with session.get(base + "api/runs/" + name,
                               headers={"Accept-Encoding": "gzip"}) as r:
            body = await r.read()
            stats[0] += 1; stats[1] += len(body) if r.status == 200 else 0
        await asyncio.sleep(1.0)
async def main():
    stats = [0, 0]
    async with aiohttp.ClientSession() as s:
        await asyncio.gather(*(client(s, stats) for _ in range(n)))
    print(stats[0], stats[1])
asyncio.run(main())
"""


def run_once(config: Path, run_dir: Path) -> tuple[float, float]:
    """Wall seconds of one run, and the CPU seconds it (and its evaluations) used."""
    started, cpu = time.perf_counter(), _children_cpu()
    subprocess.run(
        [*CLI, "optimize", str(config), "--run-dir", str(run_dir), "--quiet"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started, _children_cpu() - cpu


def process_cpu(pid: int) -> float:
    """CPU seconds a running process has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_dashboard(clients: int, rounds: int) -> None:
    rng = random.Random(9)
    server = LLMTestServer(
        distinct_programs, latency=lambda req: rng.uniform(0.2, 0.6)
    ).start_in_thread()
    alone, watched, fetched, overhead = [], [], [], []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            config = tmp / "run.toml"
            config.write_text(
                tomli_w.dumps(
                    {
                        "backend": "toy",
                        "problem": "sum_squares",
                        "seed": 5,
                        "models": {"plan": [f"openai-compatible@{server.openai_base_url}::bench"]},
                        "playbook": {"enabled": False},  # nor learn from the user's runs
                        "search": {
                            "iterations": 3,
                            "beam_size": 3,
                            "plans_per_candidate": 4,
                            "codes_per_plan": 2,
                            "repair_failed": True,
                        },
                        "evaluation": {"parallelism": 2},
                        "llm": {"max_concurrency": 8},
                    }
                )
            )
            for r in range(rounds):
                alone.append(run_once(config, tmp / "alone" / f"r{r}"))  # then watched: A B A B
                runs = tmp / "watched"
                runs.mkdir(exist_ok=True)
                serve = subprocess.Popen(
                    [*CLI, "serve", str(runs), "--port", "0"], stderr=subprocess.PIPE, text=True
                )
                base = re.search(r"at (http://\S+/)", serve.stderr.readline()).group(1)
                started_cpu = process_cpu(serve.pid)  # imports and start-up, not watching
                stop = tmp / f"stop{r}"
                load = subprocess.Popen(
                    [sys.executable, "-c", CLIENTS, base, f"r{r}", str(clients), str(stop)],
                    stdout=subprocess.PIPE,
                    text=True,
                )
                try:
                    watched.append(run_once(config, runs / f"r{r}"))
                finally:
                    stop.touch()
                    server_cpu = process_cpu(serve.pid) - started_cpu
                    clients_cpu = _children_cpu()
                    out = load.communicate(timeout=60)[0].split()
                    clients_cpu = _children_cpu() - clients_cpu
                    fetched.append((int(out[0]), int(out[1])))
                    overhead.append((server_cpu, clients_cpu))
                    serve.terminate()
                    serve.wait(timeout=30)
    finally:
        server.stop_thread()
    a, w = statistics.mean(t for t, _ in alone), statistics.mean(t for t, _ in watched)
    run_cpu = statistics.mean(c for _, c in alone + watched)
    server_cpu = statistics.mean(s for s, _ in overhead)
    clients_cpu = statistics.mean(c for _, c in overhead)
    requests = sum(n for n, _ in fetched)
    print(
        f"live run alone: {a:.2f} s (runs: {', '.join(f'{t:.2f}' for t, _ in alone)}); "
        f"with the dashboard and {clients} clients: {w:.2f} s "
        f"(runs: {', '.join(f'{t:.2f}' for t, _ in watched)}); machine load "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    print(
        f"slowdown ratio {w / a:.3f} (target < 1.05); the clients made {requests} requests "
        f"and received {sum(b for _, b in fetched) / 1e6:.1f} MB"
    )
    print(
        f"CPU per run: the run {run_cpu:.1f} s; the dashboard server {server_cpu:.2f} s "
        f"after its start-up "
        f"({server_cpu / run_cpu:.3f} of the run's); the {clients} clients {clients_cpu:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip-dashboard", action="store_true")
    args = parser.parse_args()
    bench_report(args.candidates)
    if not args.skip_dashboard:
        bench_dashboard(args.clients, args.rounds)


if __name__ == "__main__":
    main()
