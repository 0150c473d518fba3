"""What the emulator's cost model does not model, or models on an assumption, and whether it
matters for the program just evaluated.

Each limit is true of ``emulator/cost.py``, ``replay/`` and ``vectorize.py`` as they stand, and
the published trn1 measurements that expose it are named in docs/fidelity.md (Trainium). Each
detector reads only what the replay recorded for this program (its ``CostReport``). The feedback
lists the limits that fired, so the search and the user know where the modelled number is least
certain; the evaluation's ``verification["model_limits"]`` records the same list. The detectors
are deterministic and each text is one line.
"""

from __future__ import annotations

from collections.abc import Callable

from autocomp_core import applying_limits, limits_section

from .emulator.cost import ENGINE_NAMES, CostReport
from .emulator.hardware import Generation

#: A detector fires when what it measures reaches this share of the modelled latency.
SHARE_FLOOR = 0.25
SHARE_LONG_LOOPS = 0.10
SHARE_ELEMENT_DMA = 0.10
SHARE_DMA_BUSY = 0.50
SHARE_FUSED = 0.05
SHARE_POOL = 0.10


def _loops(n: int) -> str:
    return f"{n} affine_range loop{'' if n == 1 else 's'}"


def _share(ns: float, report: CostReport) -> float:
    return ns / report.latency_ns if report.latency_ns else 0.0


def _instruction_floor(report: CostReport, gen: Generation) -> str | None:
    engine = max(report.floor_ns, key=lambda e: report.floor_ns[e], default=None)
    if engine is None or _share(report.floor_ns[engine], report) < SHARE_FLOOR:
        return None
    ns = report.floor_ns[engine]
    return (
        f"tiny instructions: {report.floor_instructions[engine]} {ENGINE_NAMES[engine]} "
        f"instructions, {ns / 1000:.1f} us ({100 * _share(ns, report):.0f}% of the modelled "
        f"latency), have fewer elements than the engine's fixed cost and are each charged the "
        f"minimum initiation interval ({gen.min_ii} cycles) whatever their operands. This is the "
        "model's least certain figure: the published conv1d kernels ran such [128, 3] "
        "instructions at 28 to 61 ns each on trn1 depending on where their operands lived (SBUF "
        "or PSUM), a difference the model does not see. More elements per instruction amortize "
        "the fixed cost."
    )


def _loop_vectorization(report: CostReport, gen: Generation) -> str | None:
    long_ns = report.long_loop_instructions * gen.min_ii / gen.dve_ghz
    long = report.long_loops and _share(long_ns, report) >= SHARE_LONG_LOOPS
    if not report.vectorized_loops and not long:
        return None
    parts = []
    if report.vectorized_loops:
        parts.append(
            f"{_loops(report.vectorized_loops)} priced as vectorized, "
            f"{report.vectorized_instructions} iterations' instructions issued as one fused "
            "instruction per loop and body instruction"
        )
    if long:
        parts.append(
            f"{_loops(report.long_loops)} of elementwise instructions "
            f"({report.long_loop_instructions} instructions) priced one instruction per "
            "iteration because fused they would exceed the limit"
        )
    return (
        "loop vectorization: "
        + "; ".join(parts)
        + f". The compiler vectorizes short affine_range loops, but its limit is not documented: "
        f"the model fuses a loop only while the fused instruction stays within {gen.vector_fmax} "
        "elements per partition, so either side of that line the hardware may differ (the "
        "published conv1d kernel ran 10x faster once its 2048-trip loop was split into loops of "
        "64)."
    )


def _element_dma(report: CostReport, gen: Generation) -> str | None:
    ns = report.element_dma_ns
    if _share(ns, report) < SHARE_ELEMENT_DMA:
        return None
    return (
        f"element-granular DMA: {report.strided_dmas} transfers (transposing loads, gathers) "
        f"move an element per DMA beat, {ns / 1000:.1f} us of DMA time "
        f"({100 * _share(ns, report):.0f}% of the modelled latency). Their rate "
        f"({gen.dma_elem_ns:g} ns per element and engine) was fitted on one published chain "
        "(sd_attention); no trn1 document gives it."
    )


def _dma_bound(report: CostReport, gen: Generation) -> str | None:
    busy = report.busy_ns.get("dma", 0.0)
    if _share(busy, report) < SHARE_DMA_BUSY:
        return None
    return (
        f"DMA-bound: the DMA engines are busy {100 * _share(busy, report):.0f}% of the modelled "
        f"latency. The model spreads each transfer evenly over the {gen.dma_engines} engines at "
        "a fitted cost per transfer and per descriptor; which queue the compiler gives each "
        "transfer and how the queues take turns is not modelled (the published gemm chain's "
        "step 1, with half again as many loads in flight, measured 37% slower than its start "
        "where the model has it faster)."
    )


FUSIONS = {
    "activation_reduce": "an activation and the add-reduce of its output as one ScalarE "
    "activation-with-reduce",
    "activation_copy": "an activation writing the copy of its output nothing else reads",
    "zeroing_matmul": "no zeroing of a PSUM tile a matmul accumulation group overwrites",
}


def _fusions(report: CostReport, gen: Generation) -> str | None:
    total = sum(report.fused_ns.values())
    if _share(total, report) < SHARE_FUSED:
        return None
    merges = "; ".join(
        f"{FUSIONS[name]} ({ns / 1000:.1f} us)" for name, ns in sorted(report.fused_ns.items())
    )
    return (
        f"assumed compiler merges: the model prices {merges}, {total / 1000:.1f} us of engine "
        f"time in all ({100 * _share(total, report):.0f}% of the modelled latency) that the "
        "hardware pays if the compiler does not merge them as the model assumes."
    )


def _shared_port(report: CostReport, gen: Generation) -> str | None:
    pool = report.busy_ns.get("pool", 0.0)
    if not gen.shared_port_locks or _share(pool, report) < SHARE_POOL:
        return None
    return (
        f"VectorE and GpSimd: GpSimd is busy {pool / 1000:.1f} us. On {gen.name} the two share "
        "the SBUF port, and the model runs their instructions on one timeline, never at once; "
        "instructions whose time is fixed cost rather than data may overlap on the hardware."
    )


def _compile_config(report: CostReport, gen: Generation) -> str | None:
    names = report.compile_unmodelled
    if not names:
        return None
    return (
        f"CompileConfig options accepted, not modelled: {', '.join(names)}. The model applies "
        "NKI allocation (a tile's first write waits for the reads of the tile that held its "
        "address before), prefetch_auto (also as part of opt_level O2) and "
        "split_reused_buffers; the options named here change the compiled kernel on hardware "
        "(instruction order, copy elimination, engine choice, the rest of O2) but not the "
        "modelled latency."
    )


#: (name recorded in verification["model_limits"], detector), in the order the feedback lists them
LIMITS: tuple[tuple[str, Callable[[CostReport, Generation], str | None]], ...] = (
    ("instruction_floor", _instruction_floor),
    ("loop_vectorization", _loop_vectorization),
    ("element_granular_dma", _element_dma),
    ("dma_queues", _dma_bound),
    ("compiler_merges", _fusions),
    ("shared_sbuf_port", _shared_port),
    ("compile_config", _compile_config),
)


def applying(report: CostReport, gen: Generation) -> list[dict[str, str]]:
    """The limits that matter for this program: [{"limit": name, "detail": one line}, ...]."""
    return applying_limits(LIMITS, report, gen)


section = limits_section  # the feedback's section on them, as every backend writes it
