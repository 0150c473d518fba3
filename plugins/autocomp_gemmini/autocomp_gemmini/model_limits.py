"""What the timing model does not model, and whether it matters for the program just evaluated.

Each limit below is true of `model/timing.py` as it stands (checked against the Gemmini RTL,
github.com/ucb-bar/gemmini, `Configs.scala`, `ReservationStation.scala`, `DMA.scala`,
`LoopMatmul.scala`), and each has a detector that reads only what the model recorded for this
run (`results.json`: command counts, the DMA's rows by width, unit busy and wait times). The
feedback lists the limits that fired, so the search and the user know where the modelled
number is least certain; the evaluation's `verification["model_limits"]` records the same
list. Every detector is deterministic and its text bounded (one line each).
"""

from __future__ import annotations

from collections.abc import Callable

from autocomp_core import applying_limits, limits_section

from .model.timing import TimingParams

#: Configs.scala (defaultConfig): max_in_flight_mem_reqs. The DMA's reader and writer hold at
#: most this many memory requests in flight; the timing model has no such limit.
DMA_REQUESTS_IN_FLIGHT = 16
#: Configs.scala (defaultConfig): reservation_station_entries_ld / _ex / _st.
RTL_STATION_ENTRIES = {"load": 8, "ex": 16, "store": 4}
#: A detector fires when what it measures reaches this share of the modelled cycles.
SHARE_DMA_SHORTFALL = 0.05
SHARE_QUEUE_STALL = 0.05
SHARE_WAITS = 0.10
SHARE_DMA_BUSY = 0.50


def _dma_in_flight(results: dict, p: TimingParams) -> str | None:
    """Rows narrower than latency * bus / requests-in-flight cannot stream at the bus's rate on
    the hardware (each row is at least one request), but the model charges them at it."""
    cycles = float(results["cycles"]) or 1.0
    per_row_hw = p.dma_latency / DMA_REQUESTS_IN_FLIGHT  # cycles a row takes at the limit
    narrow_rows = 0
    shortfall = 0.0
    for width, rows in (results.get("dma_rows") or {}).items():
        charged = max(1.0, int(width) / p.bus_bytes_per_cycle)  # the model's cycles per row
        if charged < per_row_hw:
            narrow_rows += rows
            shortfall += rows * (per_row_hw - charged)
    if not narrow_rows or shortfall < SHARE_DMA_SHORTFALL * cycles:
        return None
    limit_bytes = p.dma_latency * p.bus_bytes_per_cycle / DMA_REQUESTS_IN_FLIGHT
    return (
        f"DMA requests in flight: {narrow_rows} rows moved by mvin/mvout are narrower than "
        f"{limit_bytes:.0f} bytes. The hardware's DMA keeps at most {DMA_REQUESTS_IN_FLIGHT} "
        f"memory requests in flight (at least one per row), so at the model's "
        f"{p.dma_latency}-cycle memory latency such rows take at least "
        f"{per_row_hw:.1f} cycles each, where the model, which has no such limit, charges them "
        f"at the bus's {p.bus_bytes_per_cycle} bytes/cycle: about {shortfall:.0f} cycles "
        f"({100 * shortfall / cycles:.0f}% of the modelled latency) more if they stream back to "
        "back. Wider rows (more columns per mvin) are not affected."
    )


def _loop_engine_station(results: dict, p: TimingParams) -> str | None:
    commands = results.get("commands") or {}
    loops = [name.upper() for name in ("loop_ws", "loop_conv_ws") if commands.get(name)]
    if not loops:
        return None
    e = RTL_STATION_ENTRIES
    return (
        f"loop engine issue: the commands {' and '.join(loops)} unrolls enter the load, execute "
        "and store units in the model without waiting for reservation-station entries; the "
        f"hardware's loop engine waits once {e['load']} loads, {e['ex']} executes or "
        f"{e['store']} stores it issued are outstanding, so its loads cannot run as far ahead "
        "of the computes as modelled."
    )


def _reservation_station(results: dict, p: TimingParams) -> str | None:
    cycles = float(results["cycles"]) or 1.0
    stalled = float(results["timing"]["stall_queue_full_cycles"])
    if stalled < SHARE_QUEUE_STALL * cycles:
        return None
    e = RTL_STATION_ENTRIES
    return (
        f"reservation station: the CPU waited {stalled:.0f} cycles ({100 * stalled / cycles:.0f}%) "
        f"on full command queues. The model's queues hold {p.load_depth} load, {p.ex_depth} "
        f"execute and {p.store_depth} store commands and free an entry when its command starts; "
        f"the hardware's reservation station has {e['load']}, {e['ex']} and {e['store']} entries, "
        "freed when the command completes, and tracks dependencies between them: this wait is "
        "approximate."
    )


def _moves_data(results: dict) -> bool:
    """Whether the DMA read or wrote memory (the loop engine's moves included)."""
    return float(results.get("bytes_in", 0)) + float(results.get("bytes_out", 0)) > 0


def _memory_latency(results: dict, p: TimingParams) -> str | None:
    """The array idle on its operands: where the latency of moved-in data shows (the CPU's wait
    in a fence is not counted: it also covers a loop engine that is simply still computing)."""
    cycles = float(results["cycles"]) or 1.0
    waits = float(results["timing"]["ex_dep_wait_cycles"])
    if not _moves_data(results) or waits < SHARE_WAITS * cycles:
        return None
    return (
        f"memory latency: the execute unit waited {waits:.0f} cycles on its operands "
        f"({100 * waits / cycles:.0f}% of the modelled latency). Waits on moved-in data include "
        f"the DMA's memory latency, {p.dma_latency} cycles, a model parameter (timing.toml "
        "[dma] latency), not a value from the RTL or a measured memory system."
    )


def _memory_bandwidth(results: dict, p: TimingParams) -> str | None:
    cycles = float(results["cycles"]) or 1.0
    t = results["timing"]
    busy = {u: float(t[f"{u}_busy_cycles"]) / cycles for u in ("load", "store")}
    unit = max(busy, key=lambda u: busy[u])
    if not _moves_data(results) or busy[unit] < SHARE_DMA_BUSY:
        return None
    return (
        f"memory system: the {unit} unit is busy {100 * busy[unit]:.0f}% of the modelled time. "
        f"The model moves every DMA beat at the bus's {p.bus_bytes_per_cycle} bytes/cycle behind "
        "a fixed latency: cache misses, DRAM bandwidth and contention with the CPU are not "
        "modelled, so a program this bound by data movement may be slower on the hardware."
    )


#: (name recorded in verification["model_limits"], detector), in the order the feedback lists them
LIMITS: tuple[tuple[str, Callable[[dict, TimingParams], str | None]], ...] = (
    ("dma_requests_in_flight", _dma_in_flight),
    ("loop_engine_reservation_station", _loop_engine_station),
    ("reservation_station", _reservation_station),
    ("memory_latency", _memory_latency),
    ("memory_bandwidth", _memory_bandwidth),
)


def applying(results: dict, params: TimingParams) -> list[dict[str, str]]:
    """The limits that matter for this run: [{"limit": name, "detail": one line}, ...]."""
    return applying_limits(LIMITS, results, params)


section = limits_section  # the feedback's section on them, as every backend writes it
