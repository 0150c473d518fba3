"""autocomp-trn: evaluation time per problem and calibration of the cost model, in one run.

Prints
  * per problem (its current-API baseline on trn2, the default target; its legacy baseline and
    the optimized kernel, both neuronxcc.nki, on trn1, where there are such): the whole evaluation's
    wall time and its parts -- tracing the kernel (the "build"), the replay (emulating the
    instructions on every seed, cost model included), the cost model alone, the reference and the
    check -- and the instructions emulated per second (for a PyTorch source: its operators); then
    the median and the worst;
  * startup: whole evaluations of small kernels with the trace and replay processes forked from
    the preload server (the default) and started as fresh interpreters, alternated, in wall time
    and in the machine's CPU time, and the ratio;
  * the calibration table: the modelled latency of the start and best kernels of gemm, mamba,
    attention, sd-attention and conv1d (the legacy ``@legacy`` baselines, the kernels the original
    system started from), in trace-only mode at the original full shapes on trn1, against the
    published P99 measurements on trn1 (nki.md 6.3), with the ratio and the start > best check.

    python benchmarks/trn_eval.py [--only PROBLEM ...] [--skip-timing] [--skip-startup]
                                  [--skip-calibration]

Every latency printed here is modelled by the emulator's cost model, not measured on hardware.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from autocomp_trn.evaluate import EmulatorEvaluator, Settings
from autocomp_trn.kernels import OPTIMIZED, optimized_source
from autocomp_trn.problems.catalog import all_specs, spec_by_id

CALIBRATION = [
    "tutorial/gemm",
    "tutorial/mamba",
    "tutorial/attention",
    "tutorial/sd_attention",
    "advanced/conv1d",
]


def kernels(spec) -> list[tuple[str, str, str]]:
    """(label, code, generation) of each kernel a problem is timed with."""
    found = [("baseline", spec.baseline_code(), "trn2")]
    if spec.has_legacy:
        found.append(("legacy", spec.with_legacy_baseline().baseline_code(), "trn1"))
    if spec.id in OPTIMIZED:
        found.append(("optimized", optimized_source(spec.id), "trn1"))
    return found


async def timing(evaluators: dict[str, EmulatorEvaluator], only: list[str]) -> None:
    print("Evaluation time per candidate (seconds; emulator mode, 3 seeds, sandboxed)")
    print(
        f"{'problem':26s} {'kernel':9s} {'status':12s} {'total':>6s} {'trace':>6s} {'replay':>6s} "
        f"{'cost':>6s} {'check':>6s} {'instr':>7s} {'instr/s':>8s} {'latency us':>11s}"
    )
    totals = []
    for spec in all_specs():
        if only and spec.id not in only:
            continue
        for label, code, generation in kernels(spec):
            started = time.perf_counter()
            v = await evaluators[generation].evaluate(spec, code)
            total = time.perf_counter() - started
            totals.append(total)
            p = v.phases_s
            trace = p.get("trace_s", 0.0)
            replay = p.get("replay.replay_s", p.get("framework_s", 0.0))
            check = p.get("replay.reference_s", 0.0) + p.get("replay.check_s", 0.0)
            instructions = int(v.details.get("instructions", 0))
            rate = instructions / replay if replay else 0.0
            lat = f"{v.latency_us:11.1f}" if v.latency_us is not None else f"{'-':>11s}"
            print(
                f"{spec.id:26s} {label:9s} {v.status:12s} {total:6.1f} {trace:6.1f} {replay:6.1f} "
                f"{p.get('replay.cost_s', 0.0):6.1f} {check:6.1f} {instructions:7d} {rate:8.0f} {lat}"
            )
    if totals:
        print(
            f"median evaluation {statistics.median(totals):.1f} s, worst {max(totals):.1f} s "
            f"over {len(totals)} evaluations (targets, issue 33: median <= 6 s, worst <= 20 s on 2 cores)"
        )


def machine_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (user, nice, system, irq, softirq)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return sum(int(fields[i]) for i in (1, 2, 3, 6, 7)) / os.sysconf("SC_CLK_TCK")


async def startup(repeat: int = 5) -> None:
    """Forked steps against fresh interpreters, on kernels whose evaluation is mostly start-up."""
    kernels = [("tutorial/gemm", "baseline"), ("advanced/rope", "baseline")]
    kernels += [("tutorial/gemm", "optimized")]
    ways = {"forked": Settings("trn2"), "fresh": Settings("trn2", preload=False)}
    wall: dict[str, list[float]] = {w: [] for w in ways}
    cpu: dict[str, list[float]] = {w: [] for w in ways}
    rope = spec_by_id("advanced/rope")
    for settings in ways.values():  # the server's own start is not part of a row
        await EmulatorEvaluator(settings).evaluate(rope, rope.baseline_code())
    for _ in range(repeat):
        for way, settings in ways.items():
            ev = EmulatorEvaluator(settings)
            for pid, label in kernels:
                spec = spec_by_id(pid)
                code = spec.baseline_code() if label == "baseline" else optimized_source(pid)
                c, t = machine_cpu_s(), time.perf_counter()
                v = await ev.evaluate(spec, code)
                wall[way].append(time.perf_counter() - t)
                cpu[way].append(machine_cpu_s() - c)
                assert v.ok, v.message
    print(f"\nStart-up: {len(kernels)} kernels x {repeat}, per evaluation (median)")
    for way in ways:
        print(
            f"{way:7s} {statistics.median(wall[way]):6.3f} s wall "
            f"{statistics.median(cpu[way]):6.3f} CPU-s (machine)"
        )
    print(
        f"fresh / forked: {statistics.median(wall['fresh']) / statistics.median(wall['forked']):.2f}x"
        f" wall, {statistics.median(cpu['fresh']) / statistics.median(cpu['forked']):.2f}x CPU"
    )


async def calibration(ev: EmulatorEvaluator) -> None:
    print("\nCalibration: modelled (trace-only, original full shapes, trn1) vs published P99 (ms)")
    print(
        f"{'kernel':22s} {'start model':>11s} {'published':>9s} {'ratio':>6s} {'best model':>10s} "
        f"{'published':>9s} {'ratio':>6s}  start > best"
    )
    within = ordered = 0
    for pid in CALIBRATION:
        spec = spec_by_id(pid + "@legacy")
        start = await ev.evaluate(spec, spec.baseline_code(), full=True, numeric=False)
        best = await ev.evaluate(spec, optimized_source(pid), full=True, numeric=False)
        if not (start.ok and best.ok):
            print(
                f"{pid:22s} failed: {start.status} {start.message[:200]} / {best.status} {best.message[:200]}"
            )
            continue
        s_ms, b_ms = start.latency_us / 1000, best.latency_us / 1000
        ps, pb = spec.published_ms
        rs, rb = s_ms / ps, b_ms / pb
        within += (0.5 <= rs <= 2) + (0.5 <= rb <= 2)
        ordered += s_ms > b_ms
        print(
            f"{pid.split('/')[1]:22s} {s_ms:11.3f} {ps:9.3f} {rs:6.2f} {b_ms:10.3f} {pb:9.3f} {rb:6.2f}  "
            f"{'yes' if s_ms > b_ms else 'NO'}"
        )
    print(
        f"{within} of {2 * len(CALIBRATION)} modelled values within 2x of the published ones; "
        f"start > best on {ordered} of {len(CALIBRATION)}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-startup", action="store_true")
    parser.add_argument("--skip-calibration", action="store_true")
    args = parser.parse_args()
    # trn1: the published start/best pairs the calibration compares with ran there
    evaluators = {
        g: EmulatorEvaluator(Settings(g, trace_timeout_s=600, replay_timeout_s=1200))
        for g in ("trn1", "trn2")
    }
    if not args.skip_timing:
        await timing(evaluators, args.only)
    if not args.skip_startup:
        await startup()
    if not args.skip_calibration:
        await calibration(evaluators["trn1"])


if __name__ == "__main__":
    asyncio.run(main())
