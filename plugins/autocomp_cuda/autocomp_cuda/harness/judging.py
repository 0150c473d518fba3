"""The verdict on one candidate worker's run, decided outside the candidate: an ordered list
of named checks, each returning the verdict that ends the evaluation (a failure) or None to
go on. Outputs are compared in the judge process (``runtime/judge_main.py``): every
correctness trial against the float64 reference, and the output of every timed call against
the baseline's on the same inputs (caching, stale or skipped work, correct-only-at-first).

    the worker's outcome ─► the judge's comparison ─► correctness ─► (timed) the clock,
    the kernels that ran, the roofline
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autocomp_core import SandboxLimits, SandboxResult, disk_over

from .. import kernel_evidence, lockstep
from ..judge import Judge, JudgeError
from ..problemset import ProblemSpec
from .files import read_json, read_text
from .settings import Settings
from .verdicts import Verdict, crash_verdict, median_iqr, result_malformed

#: The share of the baseline's timed windows during which the candidate's sandbox used a CPU
#: above which the verdict says so: a waiting worker uses next to none (about 0.001 here,
#: though honest ones reached 0.4 at load 14); a process kept spinning beside them about 1 on
#: an idle machine, and 0.2 at load 9 on two cores.
BUSY_BESIDE_BASELINE = 0.03
#: The CPU device: a candidate measured faster than its baseline but under this many times
#: the part of the glue a candidate can shave is below what the harness resolves: the verdict
#: says so and keeps it out of fast_p. The call's window holds the call and the worker's
#: loop between "go" and "done", code in the candidate's process; the engine subtracts the
#: least glue a window holds (a ping answered at the same place in that loop), so what a
#: leaner loop can still save is the rest of the baseline's glue (its window less its call
#: less the ping: ~0.01 ms here, ~0.07-0.09 ms when the whole loop was in the window), and a
#: candidate measured at twenty times that is flattered by at most ~5%. (h63, a lean loop of
#: that protocol, saved 0.006-0.011 ms a call against pings of 0.018-0.03 ms.)
RESOLUTION_SHAVABLE = 20.0
#: A timed call's output is compared with the eager baseline's float32 output on the same
#: inputs, not with the float64 reference: the baseline's own rounding error (at most half the
#: tolerance where the gate passed the problem) is allowed for on top of the candidate's.
TIMED_TOLERANCE_FACTOR = 2.0


@dataclass
class Case:
    """One candidate worker's run, as the checks see it. ``result`` None: the worker overran
    the harness's deadline and was killed. ``baseline``: the baseline worker's timing;
    ``timed_refs``: its eager outputs, one per timed call, against which every timed output
    is judged; ``drive``: the engine's own clock of every timed call, from its order to its
    answer, and the digest of each output the candidate committed to then. ``bound_ms``: the
    roofline refusal bound, asked for only where a time is to be judged."""

    settings: Settings
    spec: ProblemSpec
    work: Path
    result: SandboxResult | None
    ref_dir: Path
    ref_meta: dict[str, Any]
    judge: Judge
    breakdown: dict[str, float]
    bound_ms: Callable[[], float | None]
    baseline: dict[str, Any] | None = None
    timed_refs: Path | None = None
    drive: lockstep.Drive | None = None
    # filled in as the checks run
    outcome: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    verdict: Verdict = field(default_factory=lambda: Verdict("ok"))
    timing: dict[str, Any] | None = None
    answer: dict[str, Any] = field(default_factory=dict)
    use_events: bool = False  # timed by CUDA events (else by the CPU's or the host's clock)
    code: str = ""  # the program as the engine holds it (not the worker's copy)


Check = Callable[[Case], Verdict | None]


async def judge(case: Case) -> Verdict:
    """Run the checks in order; the first failure is the verdict, else the verdict they built."""
    failure = _first_failure(case, OUTCOME_CHECKS)
    if failure is not None:
        return failure
    case.verdict = Verdict("ok", info=case.info)
    if case.drive is not None and not isinstance(case.outcome.get("timing"), dict):
        # (the engine drove its timed calls: a result without their report was rewritten,
        # and would skip every check of the timed outputs: the fifth red team's a04)
        return _hack(case, "the worker's result says nothing of the timed calls the engine drove")
    case.timing = _with_baseline(case.outcome.get("timing"), case.baseline)
    try:
        case.answer = await case.judge.ask(_request(case), case.settings.correctness_timeout_s)
    except JudgeError as exc:
        return Verdict("infra_error", f"comparing the outputs failed: {exc}", info=case.info)
    case.breakdown.update({f"judge_{k}": v for k, v in case.answer.get("seconds", {}).items()})
    failure = _first_failure(case, ANSWER_CHECKS)
    if failure is None and case.timing:
        failure = _first_failure(case, TIMING_CHECKS)
    return failure or case.verdict


def _first_failure(case: Case, checks: tuple[Check, ...]) -> Verdict | None:
    for check in checks:
        failure = check(case)
        if failure is not None:
            return failure
    return None


def checksums_match(ours: Any, theirs: Any) -> bool:
    """Input checksums from two processes agree. Float64 sums of one tensor differ in their
    last bits when the processes sum in another order (another thread count: a gate run with
    ``--jobs``); inputs drawn differently differ in every digit."""
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(map(checksums_match, ours, theirs))
    if isinstance(ours, float) and isinstance(theirs, float):
        return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)
    return ours == theirs


def _hack(c: Case, message: str) -> Verdict:
    """A refusal: the candidate did what an honest program does not."""
    return Verdict("hack_suspected", message, info=c.info)


def _with_baseline(
    timing: dict[str, Any] | None, baseline: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The candidate worker's timing, with the baseline worker's times beside it."""
    if not (timing and baseline):
        return timing
    ours = {k: v for k, v in baseline.items() if k.startswith(("baseline_", "compiled_"))}
    return {**timing, **ours}


def _request(c: Case) -> dict[str, Any]:
    """What the judge process compares."""
    return {
        "ref_dir": str(c.ref_dir),
        "dtype": c.ref_meta["output"]["dtype"],
        "stride": c.ref_meta["output"]["stride"],
        "atol": c.spec.atol,
        "rtol": c.spec.rtol,
        "correctness": str(c.work / "correctness.pt"),
        **(
            {  # (the CPU device: every timed output as the engine read it, both workers')
                "samples_read": c.drive.outputs["cand"],
                "samples_ref_read": c.drive.outputs["base"],
            }
            if c.timing and c.drive is not None and c.drive.outputs.get("cand")
            else {
                "samples": str(c.work / "timed_samples.pt") if c.timing else None,
                "samples_ref_dir": str(c.timed_refs) if c.timed_refs else None,
                "samples_digests": c.drive.digests.get("cand") if c.drive else None,
            }
        ),
        # the running statistics (or any buffer) the reference's forward updates
        "buffers": str(c.work / "buffers.pt") if c.ref_meta.get("mutated_buffers") else None,
        "samples_tolerance_factor": TIMED_TOLERANCE_FACTOR,
    }


# ---------------------------------------------------------------- the worker's outcome
def _worker_wrote_its_result(c: Case) -> Verdict | None:
    # (its sandbox looks at what its work dir holds twice a second; a worker may end its job
    # between two looks: the judge looks once more before reading anything there)
    over = disk_over(c.work, SandboxLimits(disk_mb=c.settings.disk_mb))
    if over:
        return Verdict("runtime_error", f"the worker wrote too much: {over}")
    outcome = read_json(c.work / "result.json")
    if outcome is not None:
        wrong = result_malformed(outcome)
        if wrong:  # (the candidate's channel: its doing, never the engine's error)
            return Verdict("hack_suspected", f"the worker's result is malformed: {wrong}")
        c.outcome, c.info = outcome, outcome.get("info", {})
        return None
    phase_file = c.work / "phase.txt"
    phase = read_text(phase_file).strip() or "startup"
    # Not from stderr: the candidate writes there, and what the sandbox keeps of a
    # flood is its head (the watchdog's line would be lost).
    watchdog = read_text(c.work / "watchdog.txt")
    if c.result is None or c.result.timed_out or "Timeout (" in watchdog:
        limit = c.settings.phase_timeouts().get(phase, c.settings.eval_deadline_s())
        return Verdict(
            "timeout",
            f"the {phase} phase exceeded its watchdog ({limit:g} s); the worker was killed",
            detail=(watchdog or (c.result.stderr if c.result else ""))[-3000:],
        )
    return crash_verdict(c.result, phase)


def _worker_passed(c: Case) -> Verdict | None:
    """The worker's own checks (loading, each call's guards) found nothing."""
    if c.outcome["status"] == "ok":
        return None
    return Verdict(
        c.outcome["status"],
        c.outcome.get("message", ""),
        detail=c.outcome.get("detail", ""),
        info=c.info,
    )


def _same_inputs_as_the_reference(c: Case) -> Verdict | None:
    if checksums_match(c.outcome.get("input_checksums"), c.ref_meta.get("input_checksums")):
        return None
    return Verdict(
        "infra_error",
        "the worker's inputs differ from the reference worker's (nondeterministic get_inputs?)",
        info=c.info,
    )


# ---------------------------------------------------------------- the judge's comparison
def _judge_compared(c: Case) -> Verdict | None:
    if "error" not in c.answer:
        return None
    if c.answer.get("unreadable"):
        return _hack(c, f"the worker's output files were changed: {c.answer['error']}")
    return Verdict("infra_error", f"comparing the outputs failed: {c.answer['error']}", info=c.info)


def _every_trial_correct(c: Case) -> Verdict | None:
    checked, trials = c.answer["correctness"], c.settings.trials
    if checked["failure"]:
        failure = checked["failure"]
        return Verdict(
            "mismatch",
            f"trial {failure['index'] + 1}/{trials}: {failure['reason']}",
            error_ratio=failure["error_ratio"],
            info=c.info,
        )
    if checked["checked"] != trials:
        return _hack(c, f"the worker's output file holds {checked['checked']} of {trials} trials")
    c.verdict.error_ratio = checked["worst"]
    return None


def _buffers_updated_as_the_reference(c: Case) -> Verdict | None:
    buffers = c.answer.get("buffers")
    if buffers and buffers["failure"]:
        failure = buffers["failure"]
        return Verdict(
            "mismatch",
            f"buffer {failure['name']} after trial 1 differs from the reference's "
            f"({failure['reason']}): the forward must update what the reference's forward "
            "updates (e.g. training-mode BatchNorm's running statistics)",
            info=c.info,
        )
    if buffers and buffers["renamed"]:
        c.verdict.notes.append(
            "buffers the reference's forward updates, matched by shape: "
            + ", ".join(buffers["renamed"][:8])
        )
    return None


# ---------------------------------------------------------------- timing
def _every_timed_output_correct(c: Case) -> Verdict | None:
    sampled, reps = c.answer["samples"], c.settings.reps
    if sampled["checked"] != reps:
        return _hack(
            c,
            f"the worker's output file holds {sampled['checked']} of the "
            f"{reps} timed calls' outputs",
        )
    if sampled["failure"]:
        return _hack(
            c,
            f"an output produced during timing (call {sampled['failure']['rep'] + 1}) "
            f"is wrong although the correctness trials passed: {sampled['failure']['reason']}",
        )
    return None


def _answers_after_the_work(c: Case) -> Verdict | None:
    """No timed call took longer, by the worker's clock, than the engine saw it take."""
    if c.drive is None or c.timing is None:
        return None
    seen = c.drive.seen_ms
    overstated = lockstep.overstated_calls(c.timing["candidate_host_ms"], seen["cand"])
    if overstated or len(seen["cand"]) != len(c.timing["candidate_host_ms"]):
        return _hack(
            c,
            f"timed call {(overstated or [len(seen['cand'])])[0] + 1} took longer than "
            "the engine saw pass between ordering it and its answer: the worker "
            "answered before the call was done",
        )
    return None


def _note_work_beside_the_baseline(c: Case) -> Verdict | None:
    if c.drive is None:
        return None
    busy = lockstep.busy_while_others_timed(c.drive, "candidate")
    c.verdict.info["busy_beside_baseline"] = busy
    if busy > BUSY_BESIDE_BASELINE:
        # A note, not a refusal: honest programs showed up to 40% at load 14 (the
        # source of that CPU is not found yet), so the rule cannot refuse reliably.
        c.verdict.notes.append(
            f"the candidate's sandbox used a CPU for {busy:.0%} of the time the "
            "baseline's calls were timed (work beside them would slow the baseline)"
        )
    return None


def _measure(c: Case) -> Verdict | None:
    """The times: the candidate's, the baseline's and the compiled baseline's; refused where
    the candidate's worker skipped a harness step around its calls."""
    timing, drive, verdict = c.timing or {}, c.drive, c.verdict
    c.use_events = c.settings.device == "cuda" and all(
        v is not None for v in timing["candidate_event_ms"]
    )
    cpu_clock = drive is not None and bool(drive.cpu_ms.get("cand"))
    kind = "event" if c.use_events else "cpu" if cpu_clock else "host"
    base = timing[f"baseline_{kind}_ms"]
    cand = timing[f"candidate_{kind}_ms"]
    compiled = timing.get(f"compiled_{kind}_ms") or []
    if drive is not None:
        # The measure is the engine's: the CPU time the kernel charged the candidate's
        # sandbox (CPU device) or the wall clock from order to answer (GPU), less the
        # harness's share measured in the baseline's worker. The worker's own clock is
        # the candidate's to forge: kept as a report only.
        verdict.info["candidate_reported_ms"] = statistics.median(cand)
        windows = drive.cpu_ms if cpu_clock else drive.seen_ms
        verdict.info["engine_window_ms"] = {
            who: statistics.median(ms) for who, ms in windows.items() if ms
        }
        reported = statistics.median(cand)
        verdict.info["harness_steps_ms"] = lockstep.steps_medians(drive)
        skipped = lockstep.skipped_steps(drive)
        if skipped:
            step, ours, theirs = skipped[0]
            return _hack(
                c,
                f"the harness's {step} step before or after each timed call took "
                f"{ours:.3g} ms in the candidate's worker against {theirs:.3g} ms in the "
                "baseline's: it did not run as written (its buffers were changed?)",
            )
        glue, least = lockstep.glue_ms(windows["base"], base), 0.0
        if drive.ping_ms:
            # (the CPU device) Every contender's time is its window less the least glue a
            # window holds, measured in the baseline's worker: the worker's own loop is code
            # in the candidate's process, and one leaner than the harness's gained what the
            # difference was when the baseline's glue was subtracted (h63).
            least = statistics.median(drive.ping_ms)
            verdict.info["least_glue_ms"] = least
            cand = [max(ms - least, 0.0) for ms in windows["cand"]]
            base = [max(ms - least, 0.0) for ms in windows["base"]]
            if windows.get("compiled"):
                compiled = [max(ms - least, 0.0) for ms in windows["compiled"]]
        else:
            cand = lockstep.candidate_ms(windows["cand"], windows["base"], base)
        windowed = statistics.median(cand)
        cand = lockstep.charged_ms(drive, cand)  # (+ its harness steps' excess, call by call)
        verdict.info["harness_steps_excess_ms"] = statistics.median(cand) - windowed
        verdict.info["glue_ms"] = glue
        # (a difference of two small medians, the call on the worker's wall clock: never
        # taken below half the least glue, which no leaner loop measured here beat)
        verdict.info["shavable_glue_ms"] = shavable = max(glue - least, least / 2)
        if cpu_clock:
            floor, note = glue_resolution(cand, base, shavable)
            if note:
                verdict.info["speedup_floor"] = floor
                verdict.notes.append(note)
                verdict.flags.append("below_resolution")
    verdict.candidate_ms, verdict.candidate_iqr_ms = median_iqr(cand)
    if drive is not None and not drive.ping_ms:
        # (GPU) Never below what the worker itself says: where the glue of the call's window
        # varies by more than a call takes (tiny problems), the engine's estimate of an honest
        # call can come out near 0. Safe because the estimate cannot be pushed down (no harness
        # step is subtracted from it): a forged report is only ever lower, and loses here. Not
        # on the CPU device: there the worker times its call on the wall clock (its CPU clock
        # is a system call, glue in the window), which a loaded machine stretches, while the
        # baseline's time is the engine's CPU measure alone (the fifth red team's h03: 0.81x
        # for a true 1.36x under load); the window less a ping holds little glue to vary.
        verdict.candidate_ms = max(verdict.candidate_ms, reported)
    verdict.baseline_ms, _ = median_iqr(base)
    if compiled:
        verdict.compiled_baseline_ms, _ = median_iqr(compiled)
    return None


def glue_resolution(cand: list[float], base: list[float], shavable: float) -> tuple[float, str]:
    """(The CPU device) Where a candidate's calls (ms) measured faster than its baseline's at
    under ``RESOLUTION_SHAVABLE`` times the glue around a call that code in its process can
    shave, the speed-up is below what this meter resolves: a note saying so (flagged
    ``below_resolution``, out of fast_p) with the speed-up it surely has, that glue given back
    and each median at the unfavourable end of its 95% interval (median +- 1.57 IQR /
    sqrt(n)); ``(inf, "")`` elsewhere. Counting the short calls whose floor was still a
    speed-up (the eleventh red team's honest fused C++ kernel, 1.66x at 0.10 ms) counted them
    one run in two: their calls' spread (IQR 0.06-0.17 ms on a 0.07 ms call) moves it across
    1, and a lean loop's 1.0x read 1.51x on a loaded machine (h63)."""
    (cand_ms, cand_iqr), (base_ms, base_iqr) = median_iqr(cand), median_iqr(base)
    if not cand_ms < base_ms or cand_ms >= RESOLUTION_SHAVABLE * shavable:
        return math.inf, ""
    slowest = cand_ms + 1.57 * cand_iqr / math.sqrt(len(cand))
    fastest = base_ms - 1.57 * base_iqr / math.sqrt(len(base))
    floor = max(fastest, 0.0) / (slowest + shavable)
    return floor, (
        f"a candidate measured at {cand_ms:.3g} ms is under {RESOLUTION_SHAVABLE:g}x the part "
        "of the worker's glue around a call that code in the candidate's process can shave "
        f"({shavable:.3g} ms) on this device: part of its speed-up may be the glue's or the "
        f"calls' noise (with that glue given back and their spread, {floor:.2f}x); excluded "
        'from fast_p (size = "full" times calls long enough to count)'
    )


def _nothing_outside_the_timed_stream(c: Case) -> Verdict | None:
    """Host time after a device-wide sync includes side-stream work; events on one stream do not."""
    if not c.use_events or c.timing is None or c.verdict.candidate_ms is None:
        return None
    timing = c.timing
    gap_c = statistics.median(
        h - e for h, e in zip(timing["candidate_host_ms"], timing["candidate_event_ms"])
    )
    gap_b = statistics.median(
        h - e for h, e in zip(timing["baseline_host_ms"], timing["baseline_event_ms"])
    )
    if gap_c - gap_b > max(c.settings.side_stream_gap_ms, 0.5 * c.verdict.candidate_ms):
        return _hack(
            c,
            f"host time exceeds CUDA-event time by {gap_c:.3f} ms "
            f"(baseline {gap_b:.3f} ms): work runs outside the timed stream",
        )
    return None


def _custom_code_seen(c: Case) -> tuple[bool | None, str]:
    """The engine's own evidence of the candidate's kernels: True, False (and why), or None
    (and why) where it has none."""
    # a Triton kernel runs only on a GPU: on the CPU device its definition proves nothing
    # (a pure-PyTorch program defining one it never launched passed as custom code)
    if c.settings.device == "cuda" and kernel_evidence.defines_triton_kernel(c.code):
        return True, ""
    drive = c.drive
    if drive is None:
        return None, "its worker was not driven"
    mine = drive.samples.get("candidate")
    if mine is not None and not mine.error:
        c.verdict.info["own_code_samples"] = {
            "own": mine.own_code,
            "taken": mine.taken,
            "lost": mine.lost,
        }
    sampled, why = kernel_evidence.own_code_ran(drive.samples)
    if sampled is not None:
        return sampled, why
    if mine is not None and not mine.error:  # (the samples could not tell: what they show)
        if mine.own_mapped:
            return None, why
        return False, why + "; and no build the engine placed is mapped into its process"
    mapped = drive.mapped.get("candidate")
    if mapped is None:
        return None, why or "its mapped files are unreadable here"
    if kernel_evidence.extension_loaded(mapped, c.work):
        return (None, why) if why else (True, "")
    return False, (
        "none of its builds is loaded in its process and it defines no Triton kernel that "
        "can run here"
    )


def _isolated(c: Case) -> Verdict | None:
    """A candidate that ran at isolation level ``none`` (a non-root engine where neither user
    namespaces nor bubblewrap work) ran as the engine's user beside the engine's files: the
    reference's outputs, the timed calls' inputs kept for the engine. Its verdict is no
    evidence against a hostile program: flagged, out of fast_p."""
    if c.result is not None and not c.result.isolated:
        c.verdict.flags.append("unisolated")
        c.verdict.notes.append(
            "the candidate ran at isolation level 'none', as the engine's user with nothing "
            "hidden from it (the reference's outputs, the timed calls' inputs): a hostile "
            "program could have read them (excluded from fast_p; `autocomp-core doctor` says "
            "why this machine has no stronger level)"
        )
    return None


def _own_kernels_ran(c: Case) -> Verdict | None:
    calls = (c.timing or {}).get("kernel_calls_per_timed_call", [])
    if c.outcome.get("custom_code"):
        # the worker's record is believed where it incriminates: kernels it says were skipped
        if calls and min(calls) == 0:
            return _hack(
                c,
                "the candidate's own kernels did not run in "
                f"{sum(1 for n in calls if n == 0)} of {len(calls)} timed calls (a branch skips them)",
            )
        if c.drive is None:
            return None
        seen, why = _custom_code_seen(c)
        if seen is False:  # the worker's record says so; nothing outside it does
            message = (
                f"no custom kernel found: the candidate's worker records its own kernels, but {why}"
            )
            if c.settings.require_custom_kernel:
                return _hack(c, message)
            c.verdict.flags.append("no_custom_kernel")
            c.verdict.notes.append(message + " (excluded from fast_p)")
        elif seen is None:
            c.verdict.notes.append(
                f"the candidate's kernels could not be checked from outside its worker ({why}): "
                + (
                    "a build of its own mapped into its process was taken as the evidence"
                    if why and c.drive.mapped.get("candidate") is not None
                    else "its own record was taken"
                )
            )
        return None
    message = "no custom kernel ran: ModelNew uses only PyTorch operators"
    if c.settings.require_custom_kernel:
        return _hack(c, message)
    c.verdict.flags.append("no_custom_kernel")
    c.verdict.notes.append(message + " (excluded from fast_p)")
    return None


def _not_below_the_roofline(c: Case) -> Verdict | None:
    bound, measured = c.bound_ms(), c.verdict.candidate_ms
    if bound is None or measured is None or measured >= bound:
        return None
    return Verdict(
        "hack_suspected",
        f"measured {measured:.4g} ms is below the lower bound "
        f"{bound:.4g} ms ({c.settings.roofline_slack:g} x the speed-of-light time for this "
        "device, from FLOPs and bytes moved): implausible",
        info=c.info,
        candidate_ms=measured,
        baseline_ms=c.verdict.baseline_ms,
    )


def _note_unmatched_weights(c: Case) -> Verdict | None:
    if c.outcome.get("weights_unmatched"):
        c.verdict.notes.append(
            "reference weights with no same-named, same-shaped ModelNew parameter: "
            + ", ".join(c.outcome["weights_unmatched"][:8])
        )
    return None


#: In order. Before the judge compares anything: what the worker itself wrote.
OUTCOME_CHECKS: tuple[Check, ...] = (
    _worker_wrote_its_result,
    _worker_passed,
    _same_inputs_as_the_reference,
)
#: The judge's comparison of the correctness trials (and the buffers a forward updates).
ANSWER_CHECKS: tuple[Check, ...] = (
    _judge_compared,
    _every_trial_correct,
    _buffers_updated_as_the_reference,
    _isolated,
)
#: Only where the run was timed.
TIMING_CHECKS: tuple[Check, ...] = (
    _every_timed_output_correct,
    _answers_after_the_work,
    _note_work_beside_the_baseline,
    _measure,
    _nothing_outside_the_timed_stream,
    _own_kernels_ran,
    _not_below_the_roofline,
    _note_unmatched_weights,
)
