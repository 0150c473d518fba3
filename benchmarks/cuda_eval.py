"""autocomp-cuda evaluation overhead, measured side by side in one run.

Prints, for one problem: the reference computation (cold, then cached), the per-candidate
evaluation overhead with the reference cached and nothing to compile (a fresh sandboxed
worker per candidate: process start, torch import, checks, comparison), and for a C++
candidate the cold build time against the build-cache hit.

    python benchmarks/cuda_eval.py [--device cpu|cuda] [--repeat 3]
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


async def main(device: str, repeat: int) -> None:
    specs = {s.id: s for s in suite()}
    with tempfile.TemporaryDirectory() as cache:
        settings = Settings(device=device, size="tiny", reps=5, warmup=1, trials=3)
        harness = Harness(Path(cache), settings)
        spec = specs["L2/scale_bias_clamp_mul"]
        t = time.perf_counter()
        await harness.reference(spec, 0)
        cold_ref = time.perf_counter() - t
        t = time.perf_counter()
        await harness.reference(spec, 0)
        warm_ref = time.perf_counter() - t
        evals = []
        for _ in range(repeat):
            t = time.perf_counter()
            v = await harness.evaluate(spec, baseline_source(spec))
            evals.append(time.perf_counter() - t)
            assert v.status == "ok", v.message
        cpp = (ADV / "honest" / "fused_scale_bias_clamp_cpp.py").read_text()
        t = time.perf_counter()
        v_cold = await harness.evaluate(spec, cpp)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        v_hit = await harness.evaluate(spec, cpp)
        hit = time.perf_counter() - t
        print(f"device={device} problem={spec.id} size=tiny trials=3 timed reps=5")
        print(f"reference: cold {cold_ref:.2f} s, cached {warm_ref * 1e3:.2f} ms")
        print(f"per-candidate evaluation (reference cached, nothing to compile): median {statistics.median(evals):.2f} s "
              f"over {repeat} (min {min(evals):.2f} s)")
        print(f"C++ candidate, cold build: {cold:.2f} s (build phase {v_cold.phases_s.get('build', 0):.2f} s, "
              f"status {v_cold.status})")
        print(f"C++ candidate, build-cache hit: {hit:.2f} s (build phase {v_hit.phases_s.get('build', 0) * 1e3:.1f} ms, "
              f"cache hit={v_hit.build_cache_hit}, speedup vs eager {v_hit.speedup or 0:.2f}x)")
        print(f"ratio cold build / cache hit (whole evaluation): {cold / hit:.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.device, args.repeat))
