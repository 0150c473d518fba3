"""How well a backend's metric ranks programs someone measured on the real target.

A backend's ``fidelity_programs(source)`` reads programs with their published measurements
from a local checkout of a public source (``MeasuredProgram``); each is evaluated through the
backend's normal ``evaluate`` (what the search sees is what is compared), and the modelled
numbers are compared with the measured ones: Spearman rank correlation per chain and pooled,
every pair of a chain the model orders differently from the measurement (an inversion), and
the distribution of modelled/measured. ``autocomp-core fidelity`` prints and writes it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from .contract.backend import Backend, EvalContext, EvalResult, MeasuredProgram
from .errors import FidelityUnsupported
from .executors.guarded import evaluate_guarded

__all__ = [
    "FidelityUnsupported",
    "Inversion",
    "MeasuredProgram",
    "Outcome",
    "evaluate_programs",
    "format_report",
    "inversions",
    "ranks",
    "ratio_summary",
    "spearman",
    "summarize",
]

#: modelled/measured windows reported (the narrow one is the fidelity target)
NARROW_WINDOW = (0.67, 1.5)
WIDE_WINDOW = (0.5, 2.0)


@dataclass(frozen=True)
class Outcome:
    """A measured program and what the backend made of it."""

    program: MeasuredProgram
    modelled: float | None  # the metric, None when the evaluation refused the program
    refused: str = ""  # "<status>: <first line of feedback>" when refused

    @property
    def ratio(self) -> float | None:
        if self.modelled is None or self.program.measured <= 0:
            return None
        return self.modelled / self.program.measured


@dataclass(frozen=True)
class Inversion:
    """Two programs of a chain the model orders opposite to the measurement."""

    chain: str
    faster: str  # label of the program measured faster
    slower: str
    measured_faster: float
    measured_slower: float
    modelled_faster: float
    modelled_slower: float

    @property
    def measured_diff_pct(self) -> float:
        """How much slower the slower program measured, in % of the faster one."""
        return (self.measured_slower / self.measured_faster - 1.0) * 100.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "chain": self.chain,
            "faster": self.faster,
            "slower": self.slower,
            "measured_faster": self.measured_faster,
            "measured_slower": self.measured_slower,
            "modelled_faster": self.modelled_faster,
            "modelled_slower": self.modelled_slower,
            "measured_diff_pct": self.measured_diff_pct,
        }


# -- statistics ---------------------------------------------------------------------------
def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, tied values sharing the average of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            result[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson's on the ranks, ties averaged); None when it is
    undefined: fewer than two pairs, or one side constant."""
    if len(xs) != len(ys):
        raise ValueError(f"spearman: {len(xs)} values against {len(ys)}")
    if len(xs) < 2:
        return None
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / math.sqrt(sxx * syy)


def log_spearman(outcomes: Iterable[Outcome]) -> float | None:
    """Spearman on log latency of the accepted programs (the log changes no rank; it is
    kept so the pooled number reads as the contract states it)."""
    pairs = [(o.program.measured, o.modelled) for o in outcomes if o.modelled is not None]
    pairs = [(m, x) for m, x in pairs if m > 0 and x > 0]
    return spearman([math.log(m) for m, _ in pairs], [math.log(x) for _, x in pairs])


def _label(program: MeasuredProgram) -> str:
    return f"{program.step}:{program.name}"


def inversions(outcomes: Iterable[Outcome]) -> list[Inversion]:
    """Every pair within one chain whose modelled order differs from the measured order:
    opposite, or tied by the model where the measurements differ. Pairs measured equal
    and refused programs have no order to compare."""
    by_chain: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.modelled is not None:
            by_chain.setdefault(o.program.chain, []).append(o)
    found = []
    for chain, members in by_chain.items():
        members = sorted(members, key=lambda o: o.program.step)
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if a.program.measured == b.program.measured:
                    continue
                fast, slow = (a, b) if a.program.measured < b.program.measured else (b, a)
                assert fast.modelled is not None and slow.modelled is not None
                if fast.modelled >= slow.modelled:
                    found.append(
                        Inversion(
                            chain,
                            _label(fast.program),
                            _label(slow.program),
                            fast.program.measured,
                            slow.program.measured,
                            fast.modelled,
                            slow.modelled,
                        )
                    )
    return found


def ratio_summary(ratios: Sequence[float]) -> dict[str, Any]:
    """The distribution of modelled/measured: count, median, geometric mean, extremes, and
    the share inside the narrow (0.67-1.5) and wide (0.5-2) windows."""
    if not ratios:
        return {"count": 0}

    def share(window: tuple[float, float]) -> float:
        return sum(window[0] <= r <= window[1] for r in ratios) / len(ratios)

    return {
        "count": len(ratios),
        "median": statistics.median(ratios),
        "geomean": math.exp(statistics.fmean(math.log(r) for r in ratios)),
        "min": min(ratios),
        "max": max(ratios),
        "within_0.67_1.5": share(NARROW_WINDOW),
        "within_0.5_2": share(WIDE_WINDOW),
    }


def _group(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    invs = inversions(outcomes)
    return {
        "programs": len(outcomes),
        "refused": sum(o.modelled is None for o in outcomes),
        "spearman": log_spearman(outcomes),
        "ratio": ratio_summary([r for o in outcomes if (r := o.ratio) is not None]),
        "inversions": len(invs),
        "inversions_over_10pct": sum(i.measured_diff_pct > 10 for i in invs),
    }


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Everything the fidelity command reports, as plain data (``--json`` writes it)."""
    chains: dict[str, list[Outcome]] = {}
    for o in outcomes:
        chains.setdefault(o.program.chain, []).append(o)
    return {
        "programs": [
            {
                "chain": o.program.chain,
                "step": o.program.step,
                "name": o.program.name,
                "source": o.program.source,
                "problem": o.program.problem.id,
                "held_out": o.program.held_out,
                "adapted": o.program.adapted,
                "measured": o.program.measured,
                "modelled": o.modelled,
                "ratio": o.ratio,
                "refused": o.refused,
            }
            for o in outcomes
        ],
        "chains": {
            chain: {
                "held_out": any(o.program.held_out for o in members),
                **_group(members),
                "inversion_pairs": [i.to_dict() for i in inversions(members)],
            }
            for chain, members in chains.items()
        },
        "overall": {
            "all": _group(outcomes),
            "fitted": _group([o for o in outcomes if not o.program.held_out]),
            "held_out": _group([o for o in outcomes if o.program.held_out]),
        },
    }


# -- evaluation ---------------------------------------------------------------------------
def outcome_of(program: MeasuredProgram, result: EvalResult) -> Outcome:
    if result.correct and program.metric:
        value = result.extra.get(program.metric)
        if value is None:
            return Outcome(program, None, f"{result.status or 'ok'}: no {program.metric} reported")
        return Outcome(program, float(value))
    if result.correct and result.metric is not None:
        return Outcome(program, float(result.metric))
    status = result.status or (result.failure.value if result.failure else "failed")
    # the first line that says more than the status (a backend may open with the status itself)
    first = next(
        (
            line.strip()
            for line in result.feedback.splitlines()
            if line.strip() and line.strip().lower() not in (status.lower(), f"status: {status}")
        ),
        "",
    )
    return Outcome(program, None, f"{status}: {first}" if first else status)


async def evaluate_programs(
    backend: Backend,
    programs: Sequence[MeasuredProgram],
    *,
    jobs: int = 1,
    timeout_s: float = 300.0,
    progress: Callable[[int, Outcome], None] | None = None,
) -> list[Outcome]:
    """Each program through ``evaluate`` as the engine calls it (``evaluate_guarded``), at
    most ``jobs`` at once; outcomes in the order of ``programs``. Programs with the same
    problem and code (compared on different numbers of one result, ``metric``) share one
    evaluation."""
    outcomes: list[Outcome | None] = [None] * len(programs)
    limiter = anyio.CapacityLimiter(max(1, jobs))
    done = 0
    same: dict[tuple[str, str], list[int]] = {}
    for index, program in enumerate(programs):
        same.setdefault((program.problem.id, program.code), []).append(index)

    async def one(indices: list[int]) -> None:
        nonlocal done
        first = programs[indices[0]]
        async with limiter:
            result = await evaluate_guarded(
                backend, first.problem, first.code, EvalContext(seed=0, timeout_s=timeout_s)
            )
        for index in indices:
            outcomes[index] = finished = outcome_of(programs[index], result)
            done += 1
            if progress is not None:
                progress(done, finished)

    async with backend, anyio.create_task_group() as group:
        for indices in same.values():
            group.start_soon(one, indices)
    return [o for o in outcomes if o is not None]


# -- text -----------------------------------------------------------------------------------
def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def format_group(name: str, group: dict[str, Any]) -> str:
    ratio = group["ratio"]
    return (
        f"{name}: {group['programs']} programs, {group['refused']} refused; "
        f"Spearman {_num(group['spearman'], 3)}; ratio median {_num(ratio.get('median'), 3)}, "
        f"within 0.67-1.5 {_pct(ratio.get('within_0.67_1.5'))}, "
        f"within 0.5-2 {_pct(ratio.get('within_0.5_2'))}; "
        f"inversions {group['inversions']} ({group['inversions_over_10pct']} over 10%)"
    )


def format_report(report: dict[str, Any], unit: str = "") -> str:
    """The report as text: a table of programs, then per chain and overall."""
    lines = [
        f"{'chain':<32} {'step':>4} {'name':<24} {'measured':>10} {'modelled':>10} "
        f"{'ratio':>6}  {unit}".rstrip()
    ]
    for p in report["programs"]:
        tail = p["refused"] and f"REFUSED {p['refused']}"
        lines.append(
            f"{p['chain']:<32} {p['step']:>4} {p['name'][:24]:<24} {_num(p['measured']):>10} "
            f"{_num(p['modelled']):>10} {_num(p['ratio'], 3):>6}  {tail}".rstrip()
        )
    lines.append("")
    for chain, data in report["chains"].items():
        lines.append(format_group(chain + (" (held out)" if data["held_out"] else ""), data))
        for inv in data["inversion_pairs"]:
            lines.append(
                f"  inversion: {inv['faster']} measured {inv['measured_diff_pct']:.1f}% faster "
                f"than {inv['slower']}, modelled {_num(inv['modelled_faster'])} vs "
                f"{_num(inv['modelled_slower'])}"
            )
    lines.append("")
    overall = report["overall"]
    lines.append(format_group("overall (all chains)", overall["all"]))
    if overall["held_out"]["programs"]:
        lines.append(format_group("fitted chains", overall["fitted"]))
        lines.append(format_group("held-out chains", overall["held_out"]))
    return "\n".join(lines)
