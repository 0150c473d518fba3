"""The trusted replay process: validate the trace, compute outputs on fresh inputs, check, cost.

    python -m autocomp_trn.runtime.replay_main request.json

Runs only trusted code (this plugin); the trace it reads is untrusted data. It runs in a sandbox
too, for the hard time and memory limits. Prints one JSON object on stdout.
"""
from __future__ import annotations

import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[1]).read_text())
    from autocomp_trn.check import compare
    from autocomp_trn.emulator.hardware import GENERATIONS
    from autocomp_trn.emulator.replay import Replayer, TraceRefused
    from autocomp_trn.problems.catalog import spec_by_id

    timings: dict[str, float] = {}
    t = time.perf_counter()
    spec = spec_by_id(request["problem"])
    gen = GENERATIONS[request["generation"]]
    full = bool(request.get("full"))
    in_specs, out_specs = spec.shapes(full)
    seeds = request["seeds"]
    numeric = bool(request.get("numeric", True))
    trace_text = Path(request["trace"]).read_text()
    try:
        trace = json.loads(trace_text)
    except ValueError:
        return emit({"status": "rejected", "message": "malformed trace: not JSON", "code": "err_trace_tampered"})
    inputs = spec.make_inputs(seeds, full) if numeric else None
    timings["inputs_s"] = time.perf_counter() - t
    t = time.perf_counter()
    try:
        result = Replayer(trace, gen, [(i.shape, i.dtype) for i in in_specs], inputs,
                          out_specs, len(seeds) if numeric else 1).run()
    except TraceRefused as exc:
        status = "rejected" if exc.code in ("err_trace_tampered", "err_trace_too_long") else "compile_error"
        return emit({"status": status, "message": exc.message, "code": exc.code, "line": exc.line})
    timings["replay_s"] = time.perf_counter() - t
    timings["cost_s"] = result.cost_s
    cost = result.cost
    out = {"status": "ok", "latency_us": cost.latency_us, "summary": cost.summary(),
           "busy_us": {k: v / 1000 for k, v in cost.busy_ns.items()}, "critical": cost.critical_engine(),
           "instructions": cost.instructions, "events": result.events, "dma_bytes": cost.dma_bytes,
           "flops": cost.flops, "lower_bound_us": spec.lower_bound_us(gen, full)}
    if numeric:
        t = time.perf_counter()
        refs_per_seed = [spec.reference(*[x[s].astype("float64") for x in inputs], **spec.kwargs)
                         for s in range(len(seeds))]
        refs = [np.stack([r[k] for r in refs_per_seed]) for k in range(len(out_specs))]
        timings["reference_s"] = time.perf_counter() - t
        t = time.perf_counter()
        verdict = compare(result.outputs, refs, spec.atol, spec.rtol)
        timings["check_s"] = time.perf_counter() - t
        out["worst_error_ratio"] = verdict.worst_ratio
        if not verdict.ok:
            out.update(status="wrong_answer", message=verdict.message)
    if out["status"] == "ok" and cost.latency_us < out["lower_bound_us"]:
        out.update(status="rejected", code="err_implausible", message=(
            f"modelled latency {cost.latency_us:.2f} us is below the speed-of-light bound "
            f"{out['lower_bound_us']:.2f} us for this problem: refused as implausible"))
    out["timings"] = timings
    return emit(out)


def emit(obj: dict) -> int:
    sys.stdout.write("\n" + json.dumps(obj) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except MemoryError:
        emit({"status": "infra_error", "message": "the replay ran out of memory"})
        sys.exit(0)
    except Exception:  # a bug on the trusted side: reported as the evaluator's failure, not the kernel's
        emit({"status": "infra_error", "message": traceback.format_exc()[-3000:]})
        sys.exit(0)
