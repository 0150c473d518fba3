"""autocomp-cuda evaluation overhead and fused-kernel speedups, measured side by side in one run.

Prints, on one device:
  * the reference computation, cold and then cached;
  * per-candidate evaluation overhead with the reference cached and nothing to compile
    (the problem's own eager program, whose compute is microseconds at the tiny size):
    a worker started for the candidate against a warm standby worker (torch imported);
  * for an extension candidate, the cold build against the build-cache hit;
  * hand-written fused candidates (C++ on the CPU, CUDA on a GPU) against the live eager
    baseline on two fusion problems.

    python benchmarks/cuda_eval.py [--device cpu|cuda] [--repeat 5] [--cache DIR]

``--cache`` is where the fused candidates' builds are looked up and kept (default: a fresh
temporary dir); the cold-build measurement always uses a fresh one.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from autocomp_cuda.adversarial import ROOT as ADV
from autocomp_cuda.harness import Harness, Settings
from autocomp_cuda.problemset import baseline_source, suite

#: Hand-written fused candidates per device: C++ extensions on the CPU, CUDA kernels on a GPU.
FUSED = {
    "cpu": [("L2/scale_bias_clamp_mul", "fused_scale_bias_clamp_cpp.py"),
            ("L2/bias_gelu_sum", "fused_bias_gelu_sum_cpp.py")],
    "cuda": [("L2/scale_bias_clamp_mul", "fused_scale_bias_clamp_cuda.py"),
             ("L2/bias_gelu_sum", "fused_bias_gelu_sum_cuda.py")],
}


async def overhead(harness: Harness, spec, repeat: int, warm: bool) -> list[float]:
    """Wall time of whole evaluations of the eager program, one after another."""
    times = []
    for _ in range(repeat):
        if warm:
            assert await harness.warm_up(), "the standby worker did not get ready"
        t = time.perf_counter()
        verdict = await harness.evaluate(spec, baseline_source(spec))
        times.append(time.perf_counter() - t)
        assert verdict.status == "ok", verdict.message
        assert verdict.worker_warm is warm, "the worker was not in the state this row measures"
    return times


async def main(device: str, repeat: int, cache_dir: str | None) -> None:
    specs = {s.id: s for s in suite()}
    size = "tiny" if device == "cpu" else "full"
    with tempfile.TemporaryDirectory() as cache:
        base = {"device": device, "size": size, "trials": 3, "warmup": 2}
        fresh = Harness(Path(cache), Settings(**base, reps=5, warm_workers=False))
        warm = Harness(Path(cache), Settings(**base, reps=5))
        spec = specs["L2/scale_bias_clamp_mul"]
        t = time.perf_counter()
        await fresh.reference(spec, 0)
        cold_ref = time.perf_counter() - t
        t = time.perf_counter()
        await fresh.reference(spec, 0)
        cached_ref = time.perf_counter() - t
        fresh_s = await overhead(fresh, spec, repeat, warm=False)
        warm_s = await overhead(warm, spec, repeat, warm=True)
        await warm.aclose()

        fused = FUSED[device]
        cpp = (ADV / "honest" / fused[0][1]).read_text()
        t = time.perf_counter()
        v_cold = await fresh.evaluate(spec, cpp)
        cold_build = time.perf_counter() - t
        t = time.perf_counter()
        v_hit = await fresh.evaluate(spec, cpp)
        hit = time.perf_counter() - t

        print(f"device={device} size={size} trials=3 problem={spec.id}")
        print(f"reference outputs: cold {cold_ref:.2f} s, cached {cached_ref * 1e3:.2f} ms")
        print(f"per-candidate evaluation overhead (reference cached, nothing to compile), median of {repeat}:")
        print(f"  worker started for the candidate: {statistics.median(fresh_s):.3f} s (min {min(fresh_s):.3f})")
        print(f"  warm standby worker:              {statistics.median(warm_s):.3f} s (min {min(warm_s):.3f})")
        print(f"  ratio started / warm: {statistics.median(fresh_s) / statistics.median(warm_s):.1f}x")
        print(f"extension candidate ({fused[0][1]}): cold build {v_cold.phases_s.get('build', 0):.2f} s "
              f"(whole evaluation {cold_build:.2f} s, status {v_cold.status}); "
              f"build-cache hit {v_hit.phases_s.get('build', 0) * 1e3:.1f} ms "
              f"(whole evaluation {hit:.2f} s, hit={v_hit.build_cache_hit})")

        timed = Harness(Path(cache_dir or cache), Settings(**base, reps=30))
        print("fused candidates against the eager baseline, timed interleaved (30 reps):")
        for problem, name in fused:
            v = await timed.evaluate(specs[problem], (ADV / "honest" / name).read_text())
            assert v.status == "ok" and v.scored, f"{name}: {v.status} {v.message}"
            print(f"  {problem:<26} {name:<32} {v.speedup:5.2f}x  (candidate {v.candidate_ms:.4f} ms "
                  f"IQR {v.candidate_iqr_ms:.4f}, eager {v.baseline_ms:.4f} ms)")
        await timed.aclose()
        await fresh.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cache", help="build cache for the fused candidates")
    args = parser.parse_args()
    asyncio.run(main(args.device, args.repeat, args.cache))
