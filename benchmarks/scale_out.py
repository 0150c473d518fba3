"""The same suite evaluated on this machine at one slot and on a Ray cluster of two
single-CPU worker nodes, side by side in one run.

A real Ray cluster starts on loopback addresses (a head node that runs no evaluation and
two worker nodes with one CPU each); the LLM protocol test server answers after log-normal
latencies; evaluations take a known time and no CPU (the ``timed`` backend,
``benchmarks/timed_backend.py``: a device busy elsewhere), so that what is measured is the
executors, not a 2-core machine's CPU. Each suite runs as ``autocomp-core optimize-suite``
in a child process, the engine as a user runs it. Printed:

- throughput (evaluations per second) of the Ray suite over the local one (target >= 1.7):
  over the whole suite as the engine times it (``wall_s``: connecting to the cluster,
  starting the evaluation slots and disconnecting included), over the engine's whole
  process (Python's start-up and the engine's imports too, the same for both), over the
  span in which evaluations ran, and warm: after each evaluation slot's first evaluation
  (on Ray, the slots start when the suite knows its backend: a worker process per slot
  imports the engine and the backend's plugin and opens the backend, once per suite,
  while the engine itself gets going);
- per-evaluation overhead of the Ray path against local: the median time of one evaluation
  through each executor, one at a time, the same program (target <= 50 ms);
- the engine's peak memory (RSS) for a suite of about 1,000 evaluations on the cluster.

The numbers are wall-clock times on whatever machine runs this: on a shared one they move
with its load, and ratios measured side by side in one run are what to compare.

Usage: python benchmarks/scale_out.py [--delay 0.5] [--evaluations 1000] [--samples 30]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT / "tests" / "toybackend"), str(ROOT / "tests" / "engine")]

import anyio  # noqa: E402
from engine_pipeline import distinct_programs, make_latency  # noqa: E402

from autocomp_core.contract.backend import EvalContext  # noqa: E402
from autocomp_core.contract.plugins import make_backend  # noqa: E402
from autocomp_core.executors import EvalRequest  # noqa: E402
from autocomp_core.executors.local import LocalExecutor  # noqa: E402
from autocomp_core.executors.ray_executor import RayExecutor, RayOptions  # noqa: E402
from autocomp_core.ledger.store import RunStore  # noqa: E402
from autocomp_core.testing.llm_server import LLMTestServer  # noqa: E402
from autocomp_core.testing.ray_cluster import LocalRayCluster  # noqa: E402

# after engine_pipeline, which names only the toy plugin: the engine's children and the Ray
# nodes (which inherit this environment) load the timed backend too
os.environ["AUTOCOMP_PLUGINS"] = "toy_plugin,timed_backend"
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), str(HERE), str(ROOT / "tests" / "toybackend"), os.environ.get("PYTHONPATH", "")]
)
CLI = [sys.executable, "-m", "autocomp_core.cli"]
PROBLEMS = ["sum_squares", "prefix_max", "count_pairs", "count_negatives"]


def run_suite(
    server: LLMTestServer,
    suite_dir: Path,
    env: dict[str, str],
    delay: float,
    iterations: int,
    plans: int,
    codes: int,
    *extra: str,
    slots: int = 1,
) -> dict:
    """One suite in a child process: its summary, wall time, peak RSS and evaluations
    (``slots``: evaluations at once, for the warm throughput)."""
    args = [
        *CLI,
        "optimize-suite",
        *PROBLEMS,
        "--backend",
        "timed",
        "--suite-dir",
        str(suite_dir),
        "--model",
        f"openai-compatible@{server.openai_base_url}::bench",
        "--iterations",
        str(iterations),
        "--set",
        "playbook.enabled=false",  # the suites compared must not learn from each other
        "--beam-size",
        "1",
        "--plans",
        str(plans),
        "--codes",
        str(codes),
        "--concurrency",
        str(len(PROBLEMS)),
        "--quiet",
        "--json",
        "--set",
        f"backend_options.delay_s={delay}",
        "--set",
        "llm.max_concurrency=16",
        "--set",
        "llm.max_retries=0",
        *extra,
    ]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        child = subprocess.Popen(args, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)  # its own peak RSS, not this process's
        process_s = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"suite failed: {err.read().decode()[-3000:]}")
        out.seek(0)
        summary = json.loads(out.read())
    spans = []  # (started, finished) of every evaluation
    for problem in PROBLEMS:
        store = RunStore(suite_dir / problem)
        try:
            spans += [(end - r["duration_s"], end) for r, end in store.evaluations().values()]
        finally:
            store.close()
    spans.sort()
    ends = sorted(e for _, e in spans)
    return {
        "summary": summary,
        "wall_s": summary["wall_s"],
        "process_s": process_s,
        "rss_mb": usage.ru_maxrss / 1024,
        "evaluations": len(spans),
        "eval_span_s": ends[-1] - spans[0][0],
        "eval_s": statistics.median(e - s for s, e in spans),
        # the first evaluation of each slot (a Ray worker's first task starts it up)
        "first_s": max(e - s for s, e in spans[:slots]),
        # warm: from the moment every slot had finished one evaluation, to the last
        "warm_rate": (len(ends) - slots) / (ends[-1] - ends[slots - 1]),
    }


async def one_at_a_time(executor, samples: int) -> float:
    """Median seconds of one evaluation through ``executor``, one after another, after one
    to warm up (a Ray evaluation slot starts and opens the backend)."""
    backend = make_backend("timed", options={"delay_s": 0.0})
    problem = backend.load_problem("sum_squares")
    request = EvalRequest(backend, problem, problem.baseline_code, EvalContext(timeout_s=60))
    times = []
    async with executor, backend:
        for _ in range(samples + 1):
            started = time.perf_counter()
            result = await executor.evaluate(request)
            assert result.correct, result.feedback
            times.append(time.perf_counter() - started)
    return statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.5, help="seconds per evaluation")
    parser.add_argument(
        "--evaluations", type=int, default=1000, help="about how many the memory suite evaluates"
    )
    parser.add_argument("--samples", type=int, default=30, help="overhead measurements")
    args = parser.parse_args()

    server = LLMTestServer(distinct_programs).start_in_thread()
    server.latency = make_latency(0.2, 0.2, 0.3)
    tmp = Path(tempfile.mkdtemp(prefix="autocomp-scale-"))
    started = time.monotonic()
    with LocalRayCluster(head_cpus=0) as cluster:
        for name in ("w1", "w2"):
            cluster.add_node(name, num_cpus=1)
        print(
            f"cluster up in {time.monotonic() - started:.0f} s: head (no CPU for "
            f"evaluations) and two worker nodes of one CPU, at {cluster.address}"
        )
        os.environ.update(cluster.driver_env())
        env = dict(os.environ)
        ray_args = ("--executor", "ray", "--set", f"executor.address={cluster.address!r}")

        # 1. throughput: the same suite at one local slot, then on the two nodes
        sizes = (3, 4, 2)  # iterations, plans, codes
        local = run_suite(
            server,
            tmp / "local",
            env,
            args.delay,
            *sizes,
            "--set",
            "evaluation.parallelism=1",
            slots=1,
        )
        ray = run_suite(server, tmp / "ray", env, args.delay, *sizes, *ray_args, slots=2)
        assert local["evaluations"] == ray["evaluations"]

        # 2. overhead: one evaluation at a time through each executor, the same program
        local_s = anyio.run(one_at_a_time, LocalExecutor(), args.samples)
        ray_s = anyio.run(
            one_at_a_time, RayExecutor(RayOptions(address=cluster.address)), args.samples
        )

        # 3. memory: a suite of about --evaluations evaluations on the cluster
        iterations = max(1, round((args.evaluations / len(PROBLEMS) - 1) / 32))
        big = run_suite(server, tmp / "big", env, 0.0, iterations, 8, 4, *ray_args)
    server.stop_thread()
    shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"\nsuite: {len(PROBLEMS)} problems, {local['evaluations']} evaluations of "
        f"{args.delay:g} s each, LLM latencies ~0.2 s (log-normal)"
    )
    print(
        f"{'executor':<22} {'suite s':>8} {'eval/s':>7} {'process s':>10} "
        f"{'evaluating s':>13} {'eval/s':>7} {'warm eval/s':>12} {'median eval s':>14} "
        f"{'first eval s':>13} {'engine RSS MB':>14}"
    )
    for name, r in (("local, 1 slot", local), ("ray, 2 nodes x 1 CPU", ray)):
        print(
            f"{name:<22} {r['wall_s']:>8.1f} {r['evaluations'] / r['wall_s']:>7.2f} "
            f"{r['process_s']:>10.1f} "
            f"{r['eval_span_s']:>13.1f} {r['evaluations'] / r['eval_span_s']:>7.2f} "
            f"{r['warm_rate']:>12.2f} {r['eval_s']:>14.3f} {r['first_s']:>13.2f} "
            f"{r['rss_mb']:>14.0f}"
        )
    print(
        f"throughput ratio ray / local: {local['wall_s'] / ray['wall_s']:.2f}x over the "
        f"whole suite ({local['process_s'] / ray['process_s']:.2f}x over the engine's "
        f"whole process), {local['eval_span_s'] / ray['eval_span_s']:.2f}x while "
        f"evaluating, {ray['warm_rate'] / local['warm_rate']:.2f}x warm, after each slot's "
        "first evaluation (target >= 1.7)"
    )
    print(
        f"one evaluation at a time ({args.samples} samples, median): local "
        f"{local_s * 1000:.1f} ms, ray {ray_s * 1000:.1f} ms: overhead "
        f"{(ray_s - local_s) * 1000:.1f} ms per evaluation (target <= 50 ms)"
    )
    print(
        f"engine memory for a suite of {big['evaluations']} evaluations on the cluster: "
        f"peak RSS {big['rss_mb']:.0f} MB ({big['wall_s']:.0f} s)"
    )
    print(
        "Wall-clock numbers from this machine as it was loaded during the run; compare "
        "the ratios, which were measured side by side."
    )


if __name__ == "__main__":
    main()
