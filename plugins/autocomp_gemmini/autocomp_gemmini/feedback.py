"""Hardware feedback from a model run: utilization, unit busy time, stalls, % of peak."""

from __future__ import annotations

from .catalog import Spec
from .config import GemminiConfig
from .model.timing import TimingParams


def lower_bound(spec: Spec, hw: GemminiConfig, params: TimingParams | None = None) -> float:
    """Cycles no program can beat: the MACs at DIM^2 per cycle, or the minimum bytes over the bus."""
    params = params or TimingParams.from_toml()
    compute = spec.macs / hw.pe_dim**2
    memory = spec.min_bytes(hw.elem_bytes) / params.bus_bytes_per_cycle
    return float(max(compute, memory))


def metrics(results: dict, spec: Spec, hw: GemminiConfig) -> dict[str, float]:
    cycles = float(results["cycles"]) or 1.0
    t = results["timing"]
    u = results["utilization"]
    out = {
        "cycles": float(results["cycles"]),
        "cpu_instructions": float(results["cpu_instructions"]),
        "rocc_commands": float(results["rocc_commands"]),
        "macs": float(spec.macs),
        "pct_of_peak": 100.0 * spec.macs / (hw.pe_dim**2 * cycles),
        "spad_utilization_pct": 100.0 * u["spad_rows_used"] / u["spad_rows"],
        "acc_utilization_pct": 100.0 * u["acc_rows_used"] / u["acc_rows"],
        "bytes_in": float(results["bytes_in"]),
        "bytes_out": float(results["bytes_out"]),
    }
    for unit in ("load", "ex", "store"):
        out[f"{unit}_busy_pct"] = 100.0 * t[f"{unit}_busy_cycles"] / cycles
        out[f"{unit}_dep_wait_cycles"] = float(t[f"{unit}_dep_wait_cycles"])
    out["modelled_ops"] = float(t["load_commands"] + t["ex_commands"] + t["store_commands"])
    out["stall_queue_full_cycles"] = float(t["stall_queue_full_cycles"])
    out["stall_fence_cycles"] = float(t["stall_fence_cycles"])
    return out


def describe(results: dict, spec: Spec, hw: GemminiConfig) -> str:
    m = metrics(results, spec, hw)
    u = results["utilization"]
    row_kb = hw.row_bytes / 1024
    acc_kb = hw.acc_row_bytes / 1024
    bound = lower_bound(spec, hw)
    lines = [
        (
            f"Modelled latency: {m['cycles']:.0f} cycles, {m['pct_of_peak']:.1f}% of peak "
            f"({spec.macs} MACs on a {hw.pe_dim}x{hw.pe_dim} array; lower bound {bound:.0f} cycles)."
        ),
        (
            f"Scratchpad utilization: {u['spad_rows_used'] * row_kb:.1f} KB of {hw.spad_kb} KB "
            f"({m['spad_utilization_pct']:.1f}%)."
        ),
        (
            f"Accumulator utilization: {u['acc_rows_used'] * acc_kb:.1f} KB of {hw.acc_kb} KB "
            f"({m['acc_utilization_pct']:.1f}%)."
        ),
        (
            f"Unit busy time: load {m['load_busy_pct']:.1f}%, execute {m['ex_busy_pct']:.1f}%, "
            f"store {m['store_busy_pct']:.1f}%."
        ),
        (
            f"Waiting on dependencies: load {m['load_dep_wait_cycles']:.0f}, execute "
            f"{m['ex_dep_wait_cycles']:.0f}, store {m['store_dep_wait_cycles']:.0f} cycles. CPU stalled "
            f"{m['stall_queue_full_cycles']:.0f} cycles on full command queues and {m['stall_fence_cycles']:.0f} "
            "cycles in fences."
        ),
        (
            f"CPU instructions in the measured region: {m['cpu_instructions']:.0f}; RoCC commands: "
            f"{m['rocc_commands']:.0f}; bytes moved in/out: {m['bytes_in']:.0f}/{m['bytes_out']:.0f}."
        ),
    ]
    if m["spad_utilization_pct"] < 25:
        lines.append(
            "Most of the scratchpad is unused: larger tiles could keep more data on chip for reuse."
        )
    if m["ex_busy_pct"] < 30 and m["load_busy_pct"] > m["ex_busy_pct"]:
        lines.append(
            "The array idles while data moves: reuse loaded tiles and overlap loads with compute."
        )
    return "\n".join(lines)
