"""What the LLM layer adds to a call: latency and CPU, against a bare SDK call.

Both sides talk to the same zero-latency ``LLMTestServer`` (run in its own thread so the
client thread's CPU time is the client's alone): N calls through ``LLMClient.complete``
(model-string resolution, limits, retries bookkeeping, cost, usage ledger) versus N bare
``openai.AsyncOpenAI().chat.completions.create`` calls with the same messages.

    python benchmarks/llm_overhead.py [--calls 300] [--concurrency 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time

import anyio
import openai

from autocomp_core.contract.plugins import build_registry
from autocomp_core.llm.client import LLMClient
from autocomp_core.llm.settings import LLMSettings
from autocomp_core.llm.types import LLMRequest, Prompt
from autocomp_core.testing import LLMTestServer

PROMPT = Prompt(
    system="You are an expert performance engineer.",
    static="Architecture and ISA notes. " * 100,
    dynamic="Optimize this loop:\nfor (int i = 0; i < n; i++) a[i] += b[i];",
)
KEY = "sk-benchmark-000000000000"


async def run_calls(call, calls: int, concurrency: int) -> tuple[list[float], float, float]:
    """(per-call latencies, wall seconds, client-thread CPU seconds)."""
    latencies: list[float] = []
    limiter = anyio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with limiter:
            started = time.perf_counter()
            await call(i)
            latencies.append(time.perf_counter() - started)

    wall, cpu = time.perf_counter(), time.thread_time()
    async with anyio.create_task_group() as tg:
        for i in range(calls):
            tg.start_soon(one, i)
    return latencies, time.perf_counter() - wall, time.thread_time() - cpu


async def measure(server: LLMTestServer, calls: int, concurrency: int, warmup: int) -> dict:
    bare = openai.AsyncOpenAI(api_key=KEY, base_url=server.openai_base_url, max_retries=0)

    async def bare_call(i: int) -> None:
        response = await bare.chat.completions.create(
            model="gpt-4.1", temperature=1.0, messages=PROMPT.messages()
        )
        assert response.choices[0].message.content

    settings = LLMSettings(
        base_urls={"openai": server.openai_base_url}, max_concurrency=max(16, concurrency)
    )
    async with LLMClient(settings, build_registry().llm_providers()) as client:

        async def layer_call(i: int) -> None:
            response = await client.complete(
                LLMRequest(model="openai::gpt-4.1", prompt=PROMPT, phase="code", sample=i)
            )
            assert response.ok, response.error

        results = {}
        for name, call in [("bare", bare_call), ("layer", layer_call)] * 2:  # interleaved
            await run_calls(call, warmup, concurrency)
            lat, wall, cpu = await run_calls(call, calls, concurrency)
            prev = results.get(name)
            if prev is None or wall < prev["wall_s"]:  # best of two rounds
                results[name] = {
                    "wall_s": wall,
                    "cpu_s": cpu,
                    "median_ms": 1e3 * statistics.median(lat),
                    "mean_ms": 1e3 * statistics.fmean(lat),
                }
    await bare.close()
    bare_r, layer_r = results["bare"], results["layer"]
    return {
        "calls": calls,
        "concurrency": concurrency,
        "bare_ms_per_call": round(1e3 * bare_r["wall_s"] / calls, 3),
        "layer_ms_per_call": round(1e3 * layer_r["wall_s"] / calls, 3),
        "added_ms_per_call": round(1e3 * (layer_r["wall_s"] - bare_r["wall_s"]) / calls, 3),
        "latency_ratio": round(layer_r["wall_s"] / bare_r["wall_s"], 3),
        "bare_median_ms": round(bare_r["median_ms"], 3),
        "layer_median_ms": round(layer_r["median_ms"], 3),
        "bare_cpu_ms_per_call": round(1e3 * bare_r["cpu_s"] / calls, 3),
        "layer_cpu_ms_per_call": round(1e3 * layer_r["cpu_s"] / calls, 3),
        "added_cpu_ms_per_call": round(1e3 * (layer_r["cpu_s"] - bare_r["cpu_s"]) / calls, 3),
        "cpu_ratio": round(layer_r["cpu_s"] / bare_r["cpu_s"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", KEY)

    server = LLMTestServer(
        lambda request: "for (int i = 0; i < n; i += 4) { /* ... */ }", cache_min_tokens=10**9
    )
    server.start_in_thread()
    try:
        result = asyncio.run(measure(server, args.calls, args.concurrency, args.warmup))
    finally:
        server.stop_thread()
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"LLM layer overhead: {args.calls} calls, concurrency {args.concurrency}, "
        f"zero-latency server on 127.0.0.1"
    )
    print(
        f"  wall per call   bare {result['bare_ms_per_call']:8.3f} ms   layer "
        f"{result['layer_ms_per_call']:8.3f} ms   added {result['added_ms_per_call']:7.3f} ms"
        f"   ratio {result['latency_ratio']:.2f}x"
    )
    print(
        f"  median latency  bare {result['bare_median_ms']:8.3f} ms   layer "
        f"{result['layer_median_ms']:8.3f} ms"
    )
    print(
        f"  client CPU/call bare {result['bare_cpu_ms_per_call']:8.3f} ms   layer "
        f"{result['layer_cpu_ms_per_call']:8.3f} ms   added {result['added_cpu_ms_per_call']:7.3f}"
        f" ms   ratio {result['cpu_ratio']:.2f}x"
    )


if __name__ == "__main__":
    main()
