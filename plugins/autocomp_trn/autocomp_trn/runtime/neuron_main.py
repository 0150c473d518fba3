"""Neuron mode harness, run on a machine with the Neuron SDK and a NeuronCore (not runnable here).

    python -m autocomp_trn.runtime.neuron_main request.json

Current-API kernels (``nki``, NKI 0.8): the ``@nki.jit`` kernel (with the ``CompileConfig`` its
decorator carries, passed to the compiler as written) is called with NumPy inputs, one call per
seed: standalone, it compiles for ``NEURON_PLATFORM_TARGET_OVERRIDE`` and runs on the visible
NeuronCore, and ``NKI_ARTIFACTS_DIR`` keeps its NEFF. The P99 latency comes from nrtpy's
device-side benchmark of that NEFF (``nrtpy_bench.py``, in the Python the request names) or,
without nrtpy, from neuron-explorer/neuron-profile's summary.

Legacy kernels (``neuronxcc.nki``, SDKs up to Neuron 2.33): ``nki.baremetal`` for the check,
``nki.benchmark(warmup, iters)`` for the P99.

A canary request (``"canary": true``) runs the known kernel and reports ``infra_error`` when the
device's result is all zeros, a constant or wrong (``neuron.canary_failure``); it is not timed.
Prints ``AUTOCOMP_TRN_RESULT {json}``.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np

TAG = "AUTOCOMP_TRN_RESULT "


def emit(obj: dict) -> int:
    print(TAG + json.dumps(obj), flush=True)
    return 0


def load_kernel(path: Path, entry: str):
    spec = importlib.util.spec_from_file_location("kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the candidate, inside the sandbox
    return getattr(module, entry)


def device_runner(kernel, api: str, work: Path):
    """What runs the kernel on the device with NumPy arrays."""
    if api == "v1":
        from neuronxcc import nki

        return nki.baremetal(kernel, save_neff_name=str(work / "kernel.neff"))
    import nki

    # a plain function gets the default options; a jit kernel keeps its own CompileConfig
    return nki.jit(kernel) if inspect.isfunction(kernel) else kernel


def run_seeds(run, inputs: list[np.ndarray], kwargs: dict) -> list[np.ndarray]:
    """One call per seed; one array per output, leading axis = seed."""
    outputs: list[list[np.ndarray]] = []
    for s in range(inputs[0].shape[0]):
        result = run(*[np.ascontiguousarray(x[s]) for x in inputs], **kwargs)
        result = result if isinstance(result, (tuple, list)) else (result,)
        outputs = outputs or [[] for _ in result]
        for k, r in enumerate(result):
            outputs[k].append(np.asarray(r))
    return [np.stack(o) for o in outputs]


def latency_us(req: dict, work: Path, kernel, spec, inputs: list[np.ndarray]) -> float:
    from autocomp_trn.neuron import (
        find_neff,
        nrtpy_command,
        nrtpy_env,
        p99_us,
        parse_profile_summary,
        profile_commands,
    )

    if req["api"] == "v1":
        from neuronxcc import nki

        bench = nki.benchmark(kernel, warmup=req["warmup"], iters=req["iters"])
        bench(*[x[0] for x in inputs], **req["kwargs"])
        return float(bench.benchmark_result.nc_latency.get_latency_percentile(99))
    neff = find_neff(work / "artifacts")
    if req.get("nrtpy"):
        named = {i.name: _as_bytes(x[0]) for i, x in zip(spec.inputs, inputs, strict=True)}
        np.savez(work / "bench_inputs.npz", **named)
        command = nrtpy_command(
            req["nrtpy"], neff, work / "bench_inputs.npz", req["warmup"], req["iters"]
        )
        run = subprocess.run(
            command,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
            env=nrtpy_env(dict(os.environ)),
        )
        line = (run.stdout.strip().splitlines() or ["{}"])[-1]
        out = json.loads(line)
        if "durations_ms" not in out:
            raise RuntimeError(out.get("error") or run.stderr[-1000:] or "nrtpy printed nothing")
        return p99_us(out["durations_ms"])
    if req.get("profiler"):
        capture, view = profile_commands(req["profiler"], neff, work / "profile.ntff")
        subprocess.run(capture, check=True, cwd=work, capture_output=True, timeout=600)
        summary = subprocess.run(
            view, check=True, cwd=work, capture_output=True, text=True, timeout=600
        )
        return parse_profile_summary(summary.stdout)
    raise RuntimeError(
        "no timing tool: install nrtpy (in its own Python, named by AUTOCOMP_TRN_NRTPY_PYTHON) or "
        "aws-neuronx-tools (neuron-explorer)"
    )


def _as_bytes(x: np.ndarray) -> np.ndarray:
    """A NumPy-native array of the same bytes (bf16/fp8 travel as unsigned integers)."""
    if x.dtype.kind in "fiub" and x.dtype.type.__module__ == "numpy":
        return x
    return x.view(f"u{x.dtype.itemsize}")


def main(argv: list[str]) -> int:
    req = json.loads(Path(argv[1]).read_text())
    work = Path(argv[1]).parent
    from autocomp_trn.canary import CANARY_SPEC, canary_failure, canary_verdict
    from autocomp_trn.check import compare
    from autocomp_trn.emulator import dtypes
    from autocomp_trn.neuron import LEGACY_REMOVED
    from autocomp_trn.problems.catalog import spec_by_id

    spec = CANARY_SPEC if req.get("canary") else spec_by_id(req["problem"])
    try:
        kernel = load_kernel(work / req["kernel"], req["entry"])
        run = device_runner(kernel, req["api"], work)
    except ModuleNotFoundError as exc:
        if req["api"] == "v1" and (exc.name or "").startswith("neuronxcc"):
            return emit({"status": "compile_error", "message": LEGACY_REMOVED})
        return emit({"status": "compile_error", "message": traceback.format_exc()[-2000:]})
    except Exception:
        return emit({"status": "compile_error", "message": traceback.format_exc()[-2000:]})
    inputs = spec.make_inputs(req["seeds"])
    try:
        outputs = run_seeds(run, inputs, req["kwargs"])
    except Exception:
        return emit({"status": "compile_error", "message": traceback.format_exc()[-2000:]})
    refs_per_seed = [
        spec.reference(*[x[s].astype(np.float64) for x in inputs], **spec.kwargs)
        for s in range(len(req["seeds"]))
    ]
    refs = [np.stack([r[k] for r in refs_per_seed]) for k in range(len(spec.outputs))]
    if req.get("canary"):
        reason = canary_failure(outputs, refs)
        if reason:
            verdict = canary_verdict(reason)
            return emit({"status": verdict.status, "message": verdict.message})
        return emit({"status": "ok"})
    if len(outputs) != len(spec.outputs):
        return emit(
            {
                "status": "wrong_answer",
                "message": f"the kernel returned {len(outputs)} outputs, the problem has "
                f"{len(spec.outputs)}",
            }
        )
    for k, ((_, want), got) in enumerate(zip(spec.outputs, outputs, strict=True)):
        if got.dtype != np.dtype(dtypes.DTYPES[want]):  # a narrower output halves its traffic
            return emit(
                {
                    "status": "wrong_answer",
                    "message": f"output {k} has dtype {got.dtype}, the problem expects {want}",
                }
            )
    verdict = compare(outputs, refs, spec.atol, spec.rtol)
    if not verdict.ok:
        return emit({"status": "wrong_answer", "message": verdict.message})
    try:
        measured = latency_us(req, work, kernel, spec, inputs)
    except Exception:
        return emit({"status": "infra_error", "message": traceback.format_exc()[-2000:]})
    return emit({"status": "ok", "latency_us": measured, "worst_error_ratio": verdict.worst_ratio})


if __name__ == "__main__":
    sys.exit(main(sys.argv))
