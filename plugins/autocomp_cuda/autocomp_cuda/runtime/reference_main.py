"""Reference worker: computes inputs and reference outputs once per (problem, seed).

Run as ``python -m autocomp_cuda.runtime.reference_main JOB.json`` for one job, or with
``--serve IDLE_S`` to serve many problems one after another (``workers.ReferenceServer``: the
gate over a whole suite pays torch's import once per worker, not once per problem). It never
sees a candidate.
Writes into ``out_dir``: ``init.pt`` (init inputs and the reference state_dict),
``trial_K.pt`` (the expected output: float64, or exact for integer dtypes) and ``meta.json``
(output shape/dtype, tolerance sanity, and with ``gate`` the problem-quality verdict).
"""

from __future__ import annotations

import copy
import gc
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..input_plan import NATIVE
from . import common, shrink
from .compare import error_ratio, tolerance_for
from .off_distribution import redraw_constants, undefined_reason

#: On the CPU device every job runs with one intra-op thread. The gate's verdict then does
#: not depend on the machine (how a float32 sum is split between threads: KernelBench L2/88
#: passed with one and failed with two), and on a busy small machine each operation no longer
#: waits for a second OpenMP thread: a reference of kb/L1/55 at batch 2 took 3.7 s with two
#: and 1.0 s with one, at load 9 on two cores. (The candidate's workers run with one too.)
CPU_THREADS = 1


def build_model(module, init_seed: int, redraw: bool = False):
    """The problem's model from its init inputs, and the names of its constant-initialised
    weights re-drawn with ``redraw`` (``off_distribution.redraw_constants``; the same values
    for the same seed)."""
    common.seed_all(init_seed)
    init_inputs = module.get_init_inputs()
    model = module.Model(*init_inputs)
    redrawn = redraw_constants(model, init_seed) if redraw else []
    return model, init_inputs, redrawn


def run(model, inputs, device: torch.device):
    with torch.no_grad():
        out = model(*inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"reference forward returned {type(out).__name__}; one tensor is required")
    return out


class Refused(Exception):
    """The problem cannot run here, said in one line before anything is allocated."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def choose_sizes(job: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The module-constant overrides to run at: the job's own, or (``shrink``) a tiny tier
    found here. Refuses a problem that cannot shrink, or that needs more device memory than
    is free. Records in ``meta`` the sizes and the measurements they came from."""
    problem = job["problem"]
    overrides = dict(problem.get("overrides") or {})
    budget = job.get("shrink")
    if budget:
        found = shrink.shrink(problem["path"], shrink.Budget(**budget))
        fallback = job.get("shrink_fallback")  # a held-out shape's: where the search ran
        if found.error and fallback is not None:
            found = (
                shrink.shrink(problem["path"], shrink.Budget(**fallback))
                if fallback
                else shrink.Shrunk(full=found.full)  # {}: the file's own sizes
            )
        meta["full_size"] = found.full.describe() if found.full else None
        if found.error:
            raise Refused("cannot_shrink", found.error)
        overrides = found.sizes
        meta["sizes_auto"] = True
        if found.second:  # a size shrunk to 1: also checked at 2, where "the first row" is not all
            meta["second_shape"] = found.second
        meta["measured"] = found.measure.describe() if found.measure else None
    meta["sizes"] = overrides
    if job["device"] == "cuda" and torch.cuda.is_available():
        size = shrink.measure(problem["path"], overrides, shrink.Budget.unlimited(max_ops=2_000))
        needed = size.bytes * job.get("held_copies", 8)
        free, total = torch.cuda.mem_get_info()
        meta["memory_needed_bytes"] = needed
        if needed > free:
            raise Refused(
                "too_big",
                f"needs about {_gib(needed)} of GPU memory ({_gib(size.bytes)} of inputs, output "
                f"and weights, held {job.get('held_copies', 8)} times over) but "
                f"{_gib(free)} of {_gib(total)} is free; set smaller sizes with size_overrides",
            )
    return overrides


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**28 else f"{n / 2**20:.0f} MiB"


def run64(model64, inputs: list[Any], device: torch.device) -> torch.Tensor | None:
    """The forward in float64, tensors it creates itself included (``torch.randn(...)`` in
    ``forward``); None when the problem cannot run in float64 (it casts, or keeps modules
    outside its own, as a closure)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return run(model64, common.to_double(inputs), device)
    except RuntimeError as exc:
        if "dtype" in str(exc) or "Double" in str(exc):
            return None
        raise
    finally:
        torch.set_default_dtype(previous)


def input_lines(
    model64,
    inputs: list[Any],
    out64: torch.Tensor,
    state: dict,
    device: torch.device,
    atol: float,
    rtol: float,
) -> dict[str, tuple[int, float, float]]:
    """Fixed formulas of one input a broken kernel might return: the input itself and the
    least-squares line ``a * x + b`` fitted to this trial, per input of the output's shape.
    A formula is kept only where the reference departs from it on the mirrored input (-x) or
    on the input stretched four times (4x): then it matches only because of the inputs' range
    (ReLU or SELU on non-negative inputs, HardTanh on [0, 1)), not because the operator is
    that line (a matrix times a scalar)."""
    lines: dict[str, tuple[int, float, float]] = {}
    y = out64.double().flatten()
    for i, x in enumerate(inputs):
        if not (isinstance(x, torch.Tensor) and x.shape == out64.shape and x.is_floating_point()):
            continue
        flat = x.double().flatten()
        found = {f"identity_input{i}": (1.0, 0.0)}
        var = float(flat.var(correction=0))
        if var > 0:
            a = float(((flat - flat.mean()) * (y - y.mean())).mean()) / var
            found[f"affine_input{i}"] = (a, float(y.mean()) - a * float(flat.mean()))
        for factor in (-1.0, 4.0):
            model64.load_state_dict(state)
            moved = run64(
                model64, [v * factor if j == i else v for j, v in enumerate(inputs)], device
            )
            for name, (a, b) in found.items():
                if (
                    moved is None
                    or error_ratio(x.double() * factor * a + b, moved.double(), atol, rtol) > 1.0
                ):
                    lines[name] = (i, a, b)
    return lines


def trivial_probes(
    out: torch.Tensor,
    inputs: list[Any],
    constant: float,
    lines: dict[str, tuple[int, float, float]],
) -> dict[str, torch.Tensor]:
    """Answers a broken kernel might return. A sound problem rejects every one of them.

    ``constant`` is the mean output of the first trial: one fixed answer for every input;
    ``lines`` the fixed formulas of one input (see ``input_lines``), from the first trial.
    """
    probes = {"zeros": torch.zeros_like(out)}
    if out.is_floating_point():
        probes["constant_mean"] = torch.full_like(out, constant)
        probes["ones"] = torch.ones_like(out)
        for name, (i, a, b) in lines.items():
            probes[name] = (inputs[i].double() * a + b).to(out.dtype)
    return probes


def changed_buffers(model: torch.nn.Module, initial: dict[str, torch.Tensor]) -> list[str]:
    """Names of the buffers that differ from the initial state dict (after one forward)."""
    return sorted(
        name
        for name, buffer in model.named_buffers()
        if name in initial and not torch.equal(buffer.detach().cpu(), initial[name].cpu())
    )


def buffers_after(model: torch.nn.Module, names: list[str]) -> dict[str, torch.Tensor]:
    """The named buffers of ``model`` as one forward left them."""
    own = dict(model.named_buffers())
    return {name: own[name].detach().cpu().clone() for name in names if name in own}


def plain_state(model: torch.nn.Module) -> dict[str, Any]:
    """What a model keeps in plain attributes (not parameters or buffers), by dotted name:
    tensors (cloned) and numbers. ``load_state_dict`` never resets these, so a forward that
    changes one carries state into the next call (L3/33's ``self.hidden``)."""
    found: dict[str, Any] = {}
    for prefix, sub in model.named_modules():
        for name, value in vars(sub).items():
            if name.startswith("_") or name == "training":
                continue
            key = f"{prefix}.{name}" if prefix else name
            if isinstance(value, torch.Tensor):
                found[key] = value.detach().clone()
            elif isinstance(value, (int, float)):
                found[key] = value
    return found


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The plain attributes a forward added, removed or changed (see ``plain_state``)."""
    changed = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key), after.get(key)
        if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor):
            same = (
                old.shape == new.shape
                and old.dtype == new.dtype
                and bool(torch.equal(old.cpu(), new.detach().cpu()))
            )
        else:
            same = type(old) is type(new) and old == new
        if not same:
            changed.append(key)
    return changed


def stateful_check(
    model,
    initial: dict[str, Any],
    inputs: list[Any],
    out: torch.Tensor,
    device: torch.device,
    atol: float,
    rtol: float,
) -> tuple[list[str], float]:
    """After the model's first call (``out``, on ``inputs``): the plain attributes it changed
    from ``initial`` (its ``plain_state`` as built), and how far a second call on copies of
    the same inputs is from the first (in tolerances)."""
    changed = state_changes(initial, plain_state(model))
    again = run(model, [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], device)
    if again.shape != out.shape:
        return changed, math.inf
    if not out.is_floating_point():
        return changed, 0.0 if torch.equal(again, out) else math.inf
    return changed, error_ratio(again, out.double(), atol, rtol)


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    out_dir = Path(job["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    device = torch.device(job["device"])
    if device.type == "cpu":
        torch.set_num_threads(CPU_THREADS)  # (put back by serve between jobs)
    meta: dict[str, Any] = {"status": "ok", "info": common.device_info(device)}
    try:
        ReferenceRun(job, out_dir, device, meta).compute()
        common.write_json(out_dir / "meta.json", meta)
        return 0
    except Refused as exc:
        meta.update(status="refused", reason=exc.reason, error=str(exc))
        common.write_json(out_dir / "meta.json", meta)
        return 1
    except Exception as exc:  # report, do not hide: the parent turns this into an infra error
        meta.update(
            status="error",
            error=f"{type(exc).__name__}: {exc}",
            traceback=common.short_traceback(exc),
        )
        common.write_json(out_dir / "meta.json", meta)
        return 1


@dataclass
class GateFindings:
    """What the gate's checks found over the trials (``meta["gate"]``); ``constant`` and
    ``lines`` are the first trial's, for the trivial probes of every trial."""

    deterministic_gap: float = 0.0
    probe_fail: dict[str, bool] = field(default_factory=dict)
    first_gap: float = 0.0
    stateful: list[str] = field(default_factory=list)
    second_gap: float = 0.0
    constant: float = 0.0
    lines: dict[str, tuple[int, float, float]] = field(default_factory=dict)


class ReferenceRun:
    """One job: the problem loaded at the sizes it runs at, its trials run as written and in
    float64 (whose outputs are the reference), and with ``gate`` the problem-quality checks.
    What it finds goes into ``meta``."""

    def __init__(
        self, job: dict[str, Any], out_dir: Path, device: torch.device, meta: dict[str, Any]
    ) -> None:
        self.job, self.out_dir, self.device, self.meta = job, out_dir, device, meta
        self.redraw = bool(job.get("redraw_constants"))
        self.ratios: list[float] = []
        self.checks: list[Any] = []
        self.noise: list[float] = []
        # as run: a planned variant where the reference is undefined falls back
        self.variants: list[str] = []
        self.fallbacks: dict[str, str] = {}
        self.gate = GateFindings()

    def compute(self) -> None:
        self.module = self._load_problem()
        self._build()
        started = time.perf_counter()
        out = None
        for k, seed in enumerate(self.job["trial_seeds"]):
            inputs, out = self._trial(k, int(seed))
        assert out is not None
        self.meta["reference_s"] = time.perf_counter() - started
        self._describe(inputs, out)

    def _load_problem(self):
        """The problem's module, at the sizes chosen for it (``choose_sizes``)."""
        problem = self.job["problem"]
        try:
            module = common.load_module(
                problem["path"], "reference_problem", problem.get("overrides")
            )
        except Exception as exc:
            raise Refused(
                "import_error", f"importing the problem failed: {type(exc).__name__}: {exc}"
            ) from exc
        overrides = choose_sizes(self.job, self.meta)
        if overrides != (problem.get("overrides") or {}):
            module = common.load_module(problem["path"], "reference_problem", overrides)
        return module

    def _build(self) -> None:
        """The model, its float64 copy and its initial state (written to ``init.pt``)."""
        model, init_inputs, redrawn = build_model(
            self.module, int(self.job["init_seed"]), self.redraw
        )
        self.meta["redrawn_weights"] = redrawn
        self.state = copy.deepcopy(model.state_dict())
        torch.save({"init_inputs": init_inputs, "state_dict": self.state}, self.out_dir / "init.pt")
        self.model = model.to(self.device)
        self.initial_plain = plain_state(self.model)
        self.model64 = copy.deepcopy(self.model).double()

    def _run_trial(
        self, seed: int, variant: str
    ) -> tuple[list[Any], torch.Tensor, torch.Tensor, float]:
        return reference_trial(
            self.module,
            self.model,
            self.model64,
            self.state,
            seed,
            variant,
            self.device,
            self.job,
            self.meta,
        )

    def _trial(self, k: int, seed: int) -> tuple[list[Any], torch.Tensor]:
        """Trial k: its inputs (of the planned variant where the reference is defined on
        them), the expected output written for the judge, and the gate's checks."""
        planned = self.job.get("input_variants") or []
        variant = planned[k] if k < len(planned) else NATIVE
        inputs, out, out64, ratio = self._run_trial(seed, variant)
        why = undefined_reason(out, out64, ratio) if variant != NATIVE else None
        if why:
            self.fallbacks[str(k)] = f"{variant}: {why}"
            variant = NATIVE
            inputs, out, out64, ratio = self._run_trial(seed, variant)
        self.variants.append(variant)
        if k == 0:
            self._keep_mutated_buffers()
        atol, rtol = tolerance_for(out.dtype, self.job["atol"], self.job["rtol"])
        self.ratios.append(ratio)
        self.checks.append(common.input_checksums(inputs))
        if out.is_floating_point() and out.numel():
            # float32 rounding larger than the output itself: an output that is zero up to noise
            rms = float(out64.pow(2).mean().sqrt())
            self.noise.append(float((out.double() - out64).abs().max()) / rms if rms > 0 else 0.0)
        # What the judge compares with: the float64 run (the exact output for integer dtypes).
        torch.save(
            {"expected": (out64 if out.is_floating_point() else out).cpu()},
            self.out_dir / f"trial_{k}.pt",
        )
        trials = int(self.job.get("trials", len(self.job["trial_seeds"])))
        if self.job.get("gate") and k < trials:  # not the timed sets
            self._gate_trial(k, seed, variant, inputs, out, out64, (atol, rtol))
        return inputs, out

    def _keep_mutated_buffers(self) -> None:
        """After the first trial: the buffers the forward itself updates (training-mode
        BatchNorm's statistics), and what they hold after that one forward (the float64
        model's running statistics are the exact ones, where it ran)."""
        self.meta["mutated_buffers"] = changed_buffers(self.model, self.state)
        if self.meta["mutated_buffers"]:
            exact = self.model if self.meta.get("reference_precision") else self.model64
            torch.save(
                buffers_after(exact, self.meta["mutated_buffers"]),
                self.out_dir / common.BUFFERS_FILE,
            )

    def _gate_trial(
        self,
        k: int,
        seed: int,
        variant: str,
        inputs: list[Any],
        out: torch.Tensor,
        out64: torch.Tensor,
        tolerance: tuple[float, float],
    ) -> None:
        """Same weights and inputs, another RNG state: a sound reference repeats itself. After
        the first trial also: the state a call carries into the next, and the fixed formulas
        of one input; then every trivial answer must fail."""
        atol, rtol = tolerance
        device, gate = self.device, self.gate
        again_model, _, _ = build_model(self.module, int(self.job["init_seed"]), self.redraw)
        again_model = again_model.to(device)
        again_inputs = common.make_inputs(self.module, seed, device, variant)
        common.seed_all(seed ^ 0x5A5A5A)  # forward must not depend on the RNG state
        again = run(again_model, again_inputs, device)
        target = out64 if out.is_floating_point() else out
        gap = (
            error_ratio(again, out.double() if out.is_floating_point() else out, atol, rtol)
            if again.shape == out.shape
            else math.inf
        )
        gate.deterministic_gap = max(gate.deterministic_gap, gap)
        if k == 0:
            gate.first_gap = gap  # two fresh models: state carried from a call plays no part
            gate.stateful, gate.second_gap = stateful_check(
                self.model, self.initial_plain, inputs, out, device, atol, rtol
            )
            gate.constant = (
                float(out.double().mean()) if out.is_floating_point() and out.numel() else 0.0
            )
            gate.lines = (
                input_lines(self.model64, inputs, out64, self.state, device, atol, rtol)
                if out.is_floating_point()
                else {}
            )
        for name, probe in trivial_probes(out, inputs, gate.constant, gate.lines).items():
            fails = error_ratio(probe, target, atol, rtol) > 1.0
            gate.probe_fail[name] = gate.probe_fail.get(name, False) or fails

    def _describe(self, inputs: list[Any], out: torch.Tensor) -> None:
        """The output, the inputs and what the trials found, into ``meta``."""
        meta, job, gate = self.meta, self.job, self.gate
        meta["output"] = {
            "shape": list(out.shape),
            "dtype": str(out.dtype).replace("torch.", ""),
            "stride": list(out.stride()),
        }
        meta["input_shapes"] = [
            list(x.shape) if isinstance(x, torch.Tensor) else None for x in inputs
        ]
        meta["input_bytes"] = sum(
            x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor)
        )
        meta["output_bytes"] = out.numel() * out.element_size()
        meta["reference_error_ratio"] = max(self.ratios)
        meta["input_variants"] = self.variants
        meta["input_fallbacks"] = self.fallbacks
        # The variants a timed call may draw from: those the reference is defined on here.
        trials = int(job.get("trials", len(self.variants)))
        meta["timed_variants"] = sorted(set(self.variants[:trials]))
        meta["input_checksums"] = self.checks
        if job.get("gate"):
            meta["gate"] = {
                "deterministic": gate.deterministic_gap <= 0.05,
                "determinism_gap": gate.deterministic_gap,
                "probes_rejected": gate.probe_fail,
                "stateful_attributes": gate.stateful,
                "second_call_gap": gate.second_gap,
                "first_trial_gap": gate.first_gap,
                "tolerance_sane": max(self.ratios) <= 0.5,
                "noise_to_signal": max(self.noise, default=0.0),
                "memory_bytes_full": _full_bytes(job["problem"]["path"]),
            }


def reference_trial(
    module,
    model,
    model64,
    state: dict,
    seed: int,
    variant: str,
    device: torch.device,
    job: dict[str, Any],
    meta: dict[str, Any],
) -> tuple[list[Any], torch.Tensor, torch.Tensor, float]:
    """One trial's inputs, the problem's own output on them (float32, as written), the
    float64 one (the exact one for integer outputs) and how far apart they are in tolerances."""
    inputs = common.make_inputs(module, seed, device, variant)
    model.load_state_dict(state)  # every trial starts from the initial state
    out = run(model, [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs], device)
    atol, rtol = tolerance_for(out.dtype, job["atol"], job["rtol"])
    model64.load_state_dict(state)
    out64 = run64(model64, inputs, device)
    if out64 is None:  # its own precision is the reference
        meta["reference_precision"] = str(out.dtype).replace("torch.", "")
        out64 = out.clone()
    out64 = out64.to(torch.float64 if out.is_floating_point() else out.dtype)
    ratio = (
        error_ratio(out, out64, atol, rtol)
        if out.is_floating_point()
        else (0.0 if torch.equal(out, out64.to(out.dtype)) else math.inf)
    )
    return inputs, out, out64, ratio


def _full_bytes(path: str) -> int | None:
    """Inputs, output and weights at the file's own sizes (for the GPU memory check)."""
    try:
        return shrink.measure(path, {}, shrink.Budget.unlimited(max_ops=2_000)).bytes
    except Exception:
        return None


def _process_state() -> dict[str, Any]:
    """The process-wide settings a problem's code may change (see ``serve``)."""
    return {
        "dtype": torch.get_default_dtype(),
        "grad": torch.is_grad_enabled(),
        "threads": torch.get_num_threads(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "matmul": torch.get_float32_matmul_precision(),
        "path": list(sys.path),
        "environ": dict(os.environ),
        "cwd": os.getcwd(),
    }


def _restore(state: dict[str, Any], work: Path) -> None:
    torch.set_default_dtype(state["dtype"])
    torch.set_grad_enabled(state["grad"])
    torch.set_num_threads(state["threads"])
    torch.use_deterministic_algorithms(state["deterministic"])
    torch.set_float32_matmul_precision(state["matmul"])
    sys.path[:] = state["path"]
    os.environ.clear()
    os.environ.update(state["environ"])
    os.chdir(state["cwd"])
    for name, module in list(
        sys.modules.items()
    ):  # the problem and what it imported from its folder
        where = getattr(module, "__file__", None) or ""
        if name == "reference_problem" or where.startswith(str(work)):
            del sys.modules[name]
    gc.collect()


def serve(idle_s: float) -> int:
    """Serve jobs ``job-1.json``, ``job-2.json``... as they appear in the work dir (the
    harness writes each under its final name at once); after job N write ``done-N``. Each
    job's stderr goes to ``stderr-N``. Between jobs the problem's module is dropped and the
    process-wide settings are put back, so a problem starts as in a fresh process; a crash or
    a hang ends this worker (the harness kills it at the job's deadline) and no other job.
    Leaves after ``idle_s`` without a job."""
    work = Path.cwd()
    state = _process_state()
    (work / "ready").write_text("")
    n = 1
    while True:
        job = work / f"job-{n}.json"
        waited = time.monotonic()
        while not job.exists():
            if time.monotonic() - waited > idle_s:
                return 0
            time.sleep(0.01)
        sys.stderr.flush()
        with open(work / f"stderr-{n}", "w") as log:
            os.dup2(log.fileno(), 2)
        code = main(str(job))
        sys.stderr.flush()
        _restore(state, work)
        common.write_json(work / f"done-{n}", {"code": code})
        n += 1


if __name__ == "__main__":
    if sys.argv[1] == "--serve":
        sys.exit(serve(float(sys.argv[2])))
    sys.exit(main(sys.argv[1]))
