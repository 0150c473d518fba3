"""The trusted verdict on a trace: replay it on inputs drawn from the given seeds, compare with the
float64 reference, and cost it. Runs inside the replay process (``runtime/replay_main.py``)."""

from __future__ import annotations

import json
import time

import numpy as np

from . import model_limits
from .check import compare
from .emulator.compiler import CompileConfigError, validate_recorded
from .emulator.cost import CompilePolicy
from .emulator.hardware import GENERATIONS
from .emulator.replay import Replayer, TraceRefused
from .problems.spec import ProblemSpec

#: refusals (a tampered or oversized trace) rather than honest compile errors
REFUSED = ("err_trace_tampered", "err_trace_too_long", "err_false_hint", "err_hbm_capacity")


def compile_policy(trace) -> CompilePolicy:
    """The kernel's CompileConfig as the schedule applies it, checked again from scratch (the
    tracing process recorded it; its word is not taken)."""
    recorded = trace.get("compile_config") if isinstance(trace, dict) else None
    if recorded is None:
        return CompilePolicy()
    try:
        return CompilePolicy.of(validate_recorded(recorded))
    except CompileConfigError as exc:
        raise TraceRefused(exc.message, exc.code) from None


def judge(
    spec: ProblemSpec,
    trace_text: str,
    seeds: list[int],
    generation: str,
    full: bool = False,
    numeric: bool = True,
) -> dict:
    timings: dict[str, float] = {}
    gen = GENERATIONS[generation]
    in_specs, out_specs = spec.shapes(full)
    try:
        trace = json.loads(trace_text)
    except (ValueError, RecursionError):  # (nesting deep enough to exhaust the parser's stack)
        return {
            "status": "rejected",
            "message": "malformed trace: not JSON",
            "code": "err_trace_tampered",
        }
    t = time.perf_counter()
    inputs = spec.make_inputs(seeds, full) if numeric else None
    timings["inputs_s"] = time.perf_counter() - t
    t = time.perf_counter()
    try:
        replayer = Replayer(
            trace,
            gen,
            [(i.shape, i.dtype) for i in in_specs],
            inputs,
            out_specs,
            len(seeds) if numeric else 1,
        )
        replayer.core.sched.set_policy(compile_policy(trace))
        result = replayer.run()
    except TraceRefused as exc:
        return {
            "status": "rejected" if exc.code in REFUSED else "compile_error",
            "message": exc.message,
            "code": exc.code,
            "line": exc.line,
        }
    timings["replay_s"] = time.perf_counter() - t
    timings["cost_s"] = result.cost_s
    cost = result.cost
    out = {
        "status": "ok",
        "latency_us": cost.latency_us,
        "summary": cost.summary(),
        "busy_us": {k: v / 1000 for k, v in cost.busy_ns.items()},
        "critical": cost.critical_engine(),
        "instructions": cost.instructions,
        "events": result.events,
        "dma_bytes": cost.dma_bytes,
        "flops": cost.flops,
        "lower_bound_us": spec.lower_bound_us(gen, full),
        "model_limits": model_limits.applying(cost, gen),
    }
    if numeric:
        out.update(_checked(spec, inputs, result.outputs, len(seeds), out_specs, timings))
    out["timings"] = timings
    return out


def _checked(spec: ProblemSpec, inputs, outputs, n_seeds: int, out_specs, timings: dict) -> dict:
    """The outputs against the float64 reference on every seed: the worst error, and the
    wrong answer's status and message where they differ."""
    t = time.perf_counter()
    per_seed = [
        spec.reference(*[x[s].astype(np.float64) for x in inputs], **spec.kwargs)
        for s in range(n_seeds)
    ]
    refs = [np.stack([r[k] for r in per_seed]) for k in range(len(out_specs))]
    timings["reference_s"] = time.perf_counter() - t
    t = time.perf_counter()
    verdict = compare(outputs, refs, spec.atol, spec.rtol)
    timings["check_s"] = time.perf_counter() - t
    out: dict = {"worst_error_ratio": verdict.worst_ratio}
    if not verdict.ok:
        out.update(status="wrong_answer", message=verdict.message)
    return out


def refuse_below_bound(out: dict) -> dict:
    """The engine's rule (``autocomp_core.contract.validity``), applied where a verdict leaves the replay
    (imported here, not in the replay process, which stays light): a latency below the
    speed-of-light bound is refused as ``impossible_result``."""
    from autocomp_core import IMPOSSIBLE_RESULT, below_lower_bound

    if out.get("status") == "ok" and below_lower_bound(out["latency_us"], out["lower_bound_us"]):
        out.update(
            status=IMPOSSIBLE_RESULT,
            code=IMPOSSIBLE_RESULT,
            message=(
                f"modelled latency {out['latency_us']:.2f} us is below the speed-of-light bound "
                f"{out['lower_bound_us']:.2f} us for this problem: refused as impossible"
            ),
        )
    return out


def emulate(
    spec: ProblemSpec,
    code: str,
    seeds: list[int] = (11, 22),
    generation: str = "trn1",
    full: bool = False,
    numeric: bool = True,
) -> dict:
    """Trace and judge in this process, without the sandbox: for tests and benchmarks of trusted
    kernels only (the backend always runs candidates through ``evaluate.EmulatorEvaluator``)."""
    from .emulator import modules
    from .emulator.tracer import MAX_EVENTS
    from .runtime.trace_main import trace_source

    gen = GENERATIONS[generation]
    inputs, _ = spec.shapes(full)
    with modules.installed(generation, gen.sbuf_bytes_per_partition):
        status, trace = trace_source(
            code,
            spec.entry,
            [[i.name, list(i.shape), i.dtype] for i in inputs],
            spec.kwargs,
            generation,
            gen.sbuf_bytes_per_partition,
            MAX_EVENTS,
        )
    if trace is None:
        return status
    return refuse_below_bound(judge(spec, trace, list(seeds), generation, full, numeric))
