"""autocomp-cuda evaluation overhead and fused-kernel speedups, measured side by side in one run.

Prints, on one device, each line as soon as it is measured:
  * the reference computation, cold and then cached;
  * per-candidate evaluation overhead with the reference cached and nothing to compile
    (the problem's own eager program), in wall time and in the machine's CPU time (a forked
    worker is no child of this process): a worker started for the candidate with a fresh
    interpreter, one forked from the preload server (torch imported there once), and a warm
    standby worker (forked too, the default), and where the warm evaluation's time goes (the
    worker's phases, writing outputs, the judge loading and comparing them);
  * for an extension candidate, the cold build (skip with --no-cold-build) against the
    build-cache hit;
  * hand-written fused candidates (C++ on the CPU, CUDA on a GPU) against the live eager
    baseline on two fusion problems.

    python benchmarks/cuda_eval.py [--device cpu|cuda] [--repeat 5] [--cache DIR] [--no-cold-build]

``--cache`` is where the fused candidates' builds are looked up and kept (default: a fresh
temporary dir); the cold-build measurement always uses a fresh one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

from autocomp_cuda.adversarial import ROOT as ADV
from autocomp_cuda.harness import Harness, Settings
from autocomp_cuda.problemset import baseline_source, suite

#: Hand-written fused candidates per device: C++ extensions on the CPU, CUDA kernels on a GPU.
FUSED = {
    "cpu": [
        ("L2/scale_bias_clamp_mul", "fused_scale_bias_clamp_cpp.py"),
        ("L2/bias_gelu_sum", "fused_bias_gelu_sum_cpp.py"),
    ],
    "cuda": [
        ("L2/scale_bias_clamp_mul", "fused_scale_bias_clamp_cuda.py"),
        ("L2/bias_gelu_sum", "fused_bias_gelu_sum_cuda.py"),
    ],
}


say = partial(print, flush=True)


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (user, nice, system, irq, softirq)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return sum(int(fields[i]) for i in (1, 2, 3, 6, 7)) / os.sysconf("SC_CLK_TCK")


async def overhead(
    harness: Harness, spec, repeat: int, warm: bool
) -> tuple[list[float], list[dict[str, float]], float]:
    """Wall time and breakdown of whole evaluations of the eager program, one after another,
    and the machine's CPU seconds per evaluation."""
    times, breakdowns = [], []
    cpu = machine_cpu_s()
    for _ in range(repeat):
        if warm:
            assert await harness.warm_up(), "the standby worker did not get ready"
        t = time.perf_counter()
        verdict = await harness.evaluate(spec, baseline_source(spec))
        times.append(time.perf_counter() - t)
        assert verdict.status == "ok", verdict.message
        assert verdict.worker_warm is warm, "the worker was not in the state this row measures"
        breakdowns.append(verdict.breakdown_s)
    return times, breakdowns, (machine_cpu_s() - cpu) / repeat


def median_breakdown(breakdowns: list[dict[str, float]]) -> str:
    keys = list(dict.fromkeys(k for b in breakdowns for k in b))
    return ", ".join(
        f"{k} {statistics.median(b.get(k, 0.0) for b in breakdowns):.3f}" for k in keys
    )


async def main(device: str, repeat: int, cache_dir: str | None, cold_build: bool) -> None:
    specs = {s.id: s for s in suite()}
    size = "tiny" if device == "cpu" else "full"
    with tempfile.TemporaryDirectory() as cache:
        base = {"device": device, "size": size, "trials": 3, "warmup": 2}
        fresh = Harness(
            Path(cache), Settings(**base, reps=5, warm_workers=False, preload_workers=False)
        )
        forked = Harness(Path(cache), Settings(**base, reps=5, warm_workers=False))
        warm = Harness(Path(cache), Settings(**base, reps=5))
        spec = specs["L2/scale_bias_clamp_mul"]
        say(f"device={device} size={size} trials=3 problem={spec.id}")
        t = time.perf_counter()
        await fresh.reference(spec, 0)
        cold_ref = time.perf_counter() - t
        t = time.perf_counter()
        await fresh.reference(spec, 0)
        say(
            f"reference outputs: cold {cold_ref:.2f} s, cached {(time.perf_counter() - t) * 1e3:.2f} ms"
        )
        say(
            f"per-candidate evaluation overhead (reference cached, nothing to compile), median of {repeat}:"
        )
        rows = {}
        for label, harness, standby in (
            ("worker started, fresh interpreter", fresh, False),
            ("worker started, forked (preload)", forked, False),
            ("warm standby worker (forked)", warm, True),
        ):
            times, parts, cpu = await overhead(harness, spec, repeat, warm=standby)
            rows[label] = (statistics.median(times), cpu)
            say(
                f"  {label:<34} {statistics.median(times):.3f} s wall (min {min(times):.3f}), "
                f"{cpu:.3f} CPU-s"
            )
            say(f"    where it went (s): {median_breakdown(parts)}")
        await warm.aclose()
        await forked.aclose()
        (fresh_wall, fresh_cpu), (warm_wall, warm_cpu) = (
            rows["worker started, fresh interpreter"],
            rows["warm standby worker (forked)"],
        )
        forked_wall, forked_cpu = rows["worker started, forked (preload)"]
        say(
            f"  ratio fresh / forked: {fresh_wall / forked_wall:.1f}x wall, "
            f"{fresh_cpu / forked_cpu:.1f}x CPU; fresh / warm: {fresh_wall / warm_wall:.1f}x wall, "
            f"{fresh_cpu / warm_cpu:.1f}x CPU"
        )

        fused = FUSED[device]
        code = (ADV / "honest" / fused[0][1]).read_text()
        if cold_build:
            t = time.perf_counter()
            v_cold = await fresh.evaluate(spec, code)
            say(
                f"extension candidate ({fused[0][1]}): cold build {v_cold.phases_s.get('build', 0):.2f} s "
                f"(whole evaluation {time.perf_counter() - t:.2f} s, status {v_cold.status})"
            )
            t = time.perf_counter()
            v_hit = await fresh.evaluate(spec, code)
            say(
                f"  build-cache hit {v_hit.phases_s.get('build', 0) * 1e3:.1f} ms "
                f"(whole evaluation {time.perf_counter() - t:.2f} s, hit={v_hit.build_cache_hit})"
            )
        await fresh.aclose()

        timed = Harness(Path(cache_dir or cache), Settings(**base, reps=30))
        say("fused candidates against the eager baseline, timed interleaved (30 reps):")
        for problem, name in fused:
            t = time.perf_counter()
            v = await timed.evaluate(specs[problem], (ADV / "honest" / name).read_text())
            assert v.status == "ok" and v.scored, f"{name}: {v.status} {v.message}"
            say(
                f"  {problem:<26} {name:<32} {v.speedup:5.2f}x  (candidate {v.candidate_ms:.4f} ms "
                f"IQR {v.candidate_iqr_ms:.4f}, eager {v.baseline_ms:.4f} ms; evaluation "
                f"{time.perf_counter() - t:.1f} s, build cache hit {v.build_cache_hit})"
            )
        await timed.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cache", help="build cache for the fused candidates")
    parser.add_argument(
        "--no-cold-build",
        dest="cold_build",
        action="store_false",
        help="skip the cold build of an extension and its cache hit (minutes on a GPU machine)",
    )
    args = parser.parse_args()
    asyncio.run(main(args.device, args.repeat, args.cache, args.cold_build))
